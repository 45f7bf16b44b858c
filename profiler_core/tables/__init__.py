"""Tables built once as TableModels from a run's documents: what a row holds and how each cell reads. The CLI,
the app, export and report only paint or write them (render/)."""

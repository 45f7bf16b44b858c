"""What the app shows, computed without Textual: run and study state reducers, table data, advice, settings."""

from profiler_core.cli import entry_point

entry_point()

from sysprof.profiler_core.cli.main import entry_point

entry_point()

"""sysprof's engine: configuration, the timed runner, run directories, analyzers and the headless CLI.

Never imports textual; only the runner side (profiler_core.runner, profiler_core.steps) imports torch.
"""

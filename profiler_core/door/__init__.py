"""The services api.py hands the app, one module each: vocabularies, configs, numbers, GPUs, process control, runs
and studies. Each names only what the app uses, so the door stays small and every name has a user."""

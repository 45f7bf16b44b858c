"""Packaging: the four source folders install under one import root, `sysprof`.

`models/`, `profiler_core/`, `trace/` (what a training script imports: `from sysprof import trace`) and `tui/` stay
where they are in the repository, but are installed as `sysprof.models`, `sysprof.profiler_core`, `sysprof.trace`
and `sysprof.tui`: generic top-level names would be shadowed by a
user's own `models/` package in the directory a run starts from (the runner is started with `python -m`, so
that directory comes first on its path), and a user's factory in their own `models` package could not load.
Metadata lives in pyproject.toml; only the package map is computed here, so a new subpackage needs no line.
"""
from setuptools import find_packages, setup

ROOT_PACKAGE = "sysprof"
SOURCE_FOLDERS = ("models", "profiler_core", "trace", "tui")

setup(
    packages=[f"{ROOT_PACKAGE}.{name}"
              for name in find_packages(include=[f"{folder}*" for folder in SOURCE_FOLDERS])],
    package_dir={f"{ROOT_PACKAGE}.{folder}": folder for folder in SOURCE_FOLDERS},
)

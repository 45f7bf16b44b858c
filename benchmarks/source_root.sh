# Source this from the project root where the project is not pip-installed (a GPU node whose environment puts the
# root itself on PYTHONPATH): it lays the four source folders out under their import root, as the
# wheel installs them (setup.py), and puts that first on PYTHONPATH.
#   source .gpu/env.sh && source benchmarks/source_root.sh && python3 -m pytest -m gpu
sysprof_root=$(mktemp -d)
mkdir -p "$sysprof_root/sysprof"
for folder in models profiler_core trace tui; do ln -s "$PWD/$folder" "$sysprof_root/sysprof/$folder"; done
export PYTHONPATH="$sysprof_root${PYTHONPATH:+:$PYTHONPATH}"

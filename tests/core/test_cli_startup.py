"""The short `sysprof` commands import only what their work needs (no timings here: see
benchmarks/startup/cli.py). Each command runs through main() in a fresh interpreter, which then reports what it
loaded."""
import json
import subprocess
import sys

import pytest

HEAVY = {"torch", "pandas", "numpy", "scipy", "textual", "matplotlib"}

# main(argv) with stdout captured; then one JSON line: the exit code, the command's output and the top-level
# packages loaded. argparse's --help ends in SystemExit, taken as the exit code.
PROBE = """
import contextlib, io, json, sys
from sysprof.profiler_core.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(json.loads(sys.argv[1]))
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "stdout": out.getvalue(), "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def run_main(argv: list[str], env: dict) -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    probe = json.loads(result.stdout.splitlines()[-1])
    assert probe["code"] in (0, None), result.stderr[-2000:]
    return probe


@pytest.mark.parametrize("argv", [["--help"], ["models"], ["models", "--json"]])
def test_help_and_models_load_no_heavy_package(argv, cli_env):
    probe = run_main(argv, cli_env)
    assert probe["stdout"].strip()
    assert set(probe["modules"]) & HEAVY == set()
    if argv == ["models", "--json"]:
        assert json.loads(probe["stdout"])  # the presets, as before


def test_analyze_of_a_stats_dir_loads_no_torch(cli_env, shared_fixtures):
    probe = run_main(["analyze", str(shared_fixtures / "h200_small_fp32"), "--json"], cli_env)
    assert json.loads(probe["stdout"])["kernels"]  # the tables were made (with pandas) ...
    assert set(probe["modules"]) & {"torch", "textual", "matplotlib"} == set()  # ... without torch

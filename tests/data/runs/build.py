"""Regenerate the saved run directories the TUI tests open (real data only; see README.md here).

    .venv/bin/python tests/data/runs/build.py [--fixtures ../shared/fixtures] [--kernels-only | --only NAME]

1. Real CPU runs through `python -m sysprof.profiler_core run` (the real runner): two tiny runs that differ in
   context length, and one run of CS336 "small" (ctx 256, batch 4, fp32, train) on CPU.
2. The "small" run gets kernels/ and memory/ analysed from the real H200 fixture of the same model and
   shape (../shared/fixtures/h200_small_fp32): analyze_sqlite + phase_kernel_table on report.sqlite and
   analyze_snapshot on memory_snapshot.pickle. The raw sqlite/pickle are not copied (size).

--kernels-only redoes step 2's kernels/ alone (no runs, no torch): after a change to the kernel analysis.
"""
from __future__ import annotations

import argparse
import json
import lzma
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from sysprof.profiler_core.base import rundir# noqa: E402

TINY = ["--model", "tiny", "--device", "cpu", "--batch", "2", "--warmup", "2", "--steps", "5"]
RUNS = {  # saved name -> sysprof run options
    "tiny-ctx32": TINY + ["--ctx", "32"],
    "tiny-ctx64": TINY + ["--ctx", "64"],
    "tiny-2ranks": TINY + ["--ctx", "32", "--nproc", "2"],  # two gloo ranks: the per-rank table
    "small-h200-analyses": ["--model", "small", "--device", "cpu", "--ctx", "256", "--batch", "4",
                            "--warmup", "1", "--steps", "3"],
}
# DESIGN.md §3, measured on an H200: bare CUDA-event loop, CS336 small, batch 4, ctx 256, fp32 train.


def real_run(options: list[str], runs_dir: Path) -> Path:
    result = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "run", *options, "--json",
                             "--runs-dir", str(runs_dir)], capture_output=True, text=True, cwd=ROOT, check=True)
    return Path(json.loads(result.stdout)["run_dir"])


def save(run_dir: Path, name: str) -> Path:
    """Copy to tests/data/runs/NAME (a multi-rank run: tests/data/rank_runs/NAME, so the screens that list
    tests/data/runs stay as they are) and point run_dir fields at the new place (relative to the repo)."""
    target = (HERE.parent / "rank_runs" if "--nproc" in RUNS[name] else HERE) / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(run_dir, target)
    summary = rundir.read_json(target / rundir.SUMMARY)
    summary["run_dir"] = str(target.relative_to(ROOT))
    rundir.write_json(target / rundir.SUMMARY, summary)
    for path in (p for p in target.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".log")):
        text = path.read_text()  # no path of the machine that built it: the scratch run dir, the checkout
        path.write_text(text.replace(str(run_dir), str(target.relative_to(ROOT))).replace(f"{ROOT}/", ""))
    return target


def decompress(path: Path, into: Path) -> Path:
    out = into / path.name.removesuffix(".xz")
    out.write_bytes(lzma.decompress(path.read_bytes()))
    return out


def add_kernels(target: Path, sqlite: Path) -> dict:
    """What the session's profiled pass writes (kernels/), from the fixture's report and the saved run's config."""
    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.kernels.attribution import attribute_kernels
    from sysprof.profiler_core.session.analysis import attention_shape, write_kernel_tables

    cfg = RunConfig.from_dict(rundir.read_json(target / rundir.MANIFEST)["config"])
    return write_kernel_tables(attribute_kernels(sqlite), target / "kernels",
                               "h200_small_fp32/report.sqlite (../shared/fixtures)", "nsys-sqlite", attention_shape(cfg))


def add_memory(target: Path, snapshot: Path) -> None:
    """What the session's memory pass writes, from the fixture's snapshot (the config is the saved run's)."""
    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.session.analysis import memory_analysis

    (target / "memory").mkdir(exist_ok=True)
    cfg = RunConfig.from_dict(rundir.read_json(target / rundir.MANIFEST)["config"])
    analysis = memory_analysis(cfg, snapshot)
    analysis["source"] = "h200_small_fp32/memory_snapshot.pickle (../shared/fixtures)"
    rundir.write_json(target / "memory" / "analysis.json", analysis)


def add_profile_record(target: Path, kernels: dict) -> None:
    """summary.profile from the fixture's nsys step times; the fixture has no clean pass, so no inflation."""
    profiled = statistics.median(step["wall_ns"] / 1e6 for step in kernels["steps"])
    summary = rundir.read_json(target / rundir.SUMMARY)
    summary["profile"] = {"backend": "nsys", "profiled_median_ms": round(profiled, 3),
                          "clean_median_ms": None, "inflation": None, "dir": "profiled"}
    summary["kernels"], summary["memory"] = "kernels/analysis.json", "memory/analysis.json"
    rundir.write_json(target / rundir.SUMMARY, summary)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=Path, default=ROOT.parent / "shared" / "fixtures")
    parser.add_argument("--kernels-only", action="store_true", help="redo small-h200-analyses/kernels only")
    parser.add_argument("--only", choices=[name for name in RUNS if name != "small-h200-analyses"],
                        help="redo this one CPU run alone (the others, and the tests that read them, stay)")
    args = parser.parse_args()
    fixture = args.fixtures / "h200_small_fp32"
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        if args.kernels_only:
            add_kernels(HERE / "small-h200-analyses", decompress(fixture / "report.sqlite.xz", scratch))
            return
        if args.only:
            print(save(real_run(RUNS[args.only], scratch / "runs"), args.only))
            return
        saved = {name: save(real_run(options, scratch / "runs"), name) for name, options in RUNS.items()}
        target = saved["small-h200-analyses"]
        kernels = add_kernels(target, decompress(fixture / "report.sqlite.xz", scratch))
        add_memory(target, decompress(fixture / "memory_snapshot.pickle.xz", scratch))
        add_profile_record(target, kernels)
    print("\n".join(str(p) for p in saved.values()))


if __name__ == "__main__":
    main()

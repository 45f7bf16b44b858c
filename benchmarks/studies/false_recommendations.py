"""Does the advisor recommend a change that an independent A/B does not confirm? `sysprof advise` run N times on
one config, in fresh processes; each run's answer (the options it recommends over the baseline) is then checked by
`sysprof ab` (the baseline against those options, interleaved, its own processes). A run is a false recommendation
when its answer's A/B tokens/s verdict is not "faster".

    python3 -m benchmarks.studies.false_recommendations [--runs 10] [--ab-repeats 4] [--out FILE] [--gpus 0,1,2,3]
        -- ADVISE OPTIONS

ADVISE OPTIONS are `sysprof advise`'s (e.g. `--model tiny --device cpu --ctx 64 --steps 5 --warmup 2 --budget 3`).
Prints one JSON line per advise run, then the totals: runs with any false recommendation (target ≤ 1 of 10).
`--gpus` runs the advisors side by side, one chain per GPU id listed (CUDA_VISIBLE_DEVICES), the runs dealt out in
turn: four advisors on one host are each other's neighbours, which is the shared node the advisor must hold on; an id
listed twice puts two advisors on that GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import run_json, run_tool
from sysprof.profiler_core.studies.results import study_tables


def advise_once(options: list[str], runs_dir: Path) -> tuple[Path | None, str]:
    done = run_tool("advise", *options, "--runs-dir", str(runs_dir), "--json")
    try:
        return Path(json.loads(done.stdout)["study_dir"]), ""
    except (ValueError, KeyError):
        return None, (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]


def recommended(study_dir: Path) -> tuple[list[dict], str]:
    """What the advisor recommends (the answer's options, with its tokens/s ×), and its answer line."""
    [answer] = study_tables(study_dir)["recommended"]
    if not answer.get("options"):
        return [], answer["answer"]
    return [{"name": answer["answer"].split(":")[0], "options": answer["options"], "advise": answer["answer"]}], \
        answer["answer"]


def confirmed_by_ab(shared: list[str], options: str, repeats: int, runs_dir: Path) -> dict:
    found = run_json("ab", *shared, f"--b={options}", "--a=", "--repeats", str(repeats), "--runs-dir",
                     str(runs_dir))
    rate = next((row for row in found.get("phases", []) if row.get("phase") == "tokens/s"), None)
    return {"ab_verdict": rate.get("verdict") if rate else found.get("status", "no tokens/s"),
            "ab_ratio": rate.get("ratio_b_over_a") if rate else None}


def shared_options(options: list[str]) -> list[str]:
    """The advise options that are run options (ab takes those, not --budget)."""
    kept, skip = [], False
    for word in options:
        if skip:
            skip = False
            continue
        if word == "--budget":
            skip = True
            continue
        kept.append(word)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--ab-repeats", type=int, default=4)
    parser.add_argument("--runs-dir", type=Path, default=Path("runs-false-recommendations"))
    parser.add_argument("--out", type=Path, help="also write every run's line and the totals here (JSON)")
    parser.add_argument("--gpus", help="run the advisors side by side, one chain per GPU id (e.g. 0,1,2,3)")
    parser.add_argument("--chain", nargs=2, type=int, default=(1, 1), help=argparse.SUPPRESS,
                        metavar=("FIRST", "EVERY"))  # one chain of --gpus: its first run's number, the step between
    parser.add_argument("advise", nargs=argparse.REMAINDER, help="-- then the advise options")
    args = parser.parse_args()
    options = [word for word in args.advise if word != "--"]
    results = side_by_side(args, options) if args.gpus else one_chain(args, options)
    if "--chain" in sys.argv:  # one chain of several: the parent prints the totals
        return
    ran = [r for r in results if r["study"]]
    totals = {"advise options": shlex.join(options), "runs": len(ran),
              "runs with a false recommendation": sum(bool(r["false"]) for r in ran),
              "runs recommending anything": sum(bool(r["recommended"]) for r in ran)}
    print(json.dumps(totals))
    if args.out:
        args.out.write_text(json.dumps({"command": shlex.join(options), "runs": results, "totals": totals}, indent=1))


def side_by_side(args: argparse.Namespace, options: list[str]) -> list[dict]:
    """This script once per GPU, each with its share of the runs; their lines, in run order."""
    gpus = args.gpus.split(",")
    chains = []
    for index, gpu in enumerate(gpus):
        runs = len(range(index, args.runs, len(gpus)))
        if not runs:
            continue
        folder = args.runs_dir / f"chain{index + 1}-gpu{gpu}"  # a GPU may hold several chains (--gpus 1,1,2,2)
        folder.mkdir(parents=True, exist_ok=True)
        out = folder / "false_recommendations.json"
        out.unlink(missing_ok=True)  # an earlier call's lines are not this call's
        argv = [sys.executable, "-m", "benchmarks.studies.false_recommendations", "--runs", str(runs),
                "--ab-repeats", str(args.ab_repeats), "--runs-dir", str(folder), "--out", str(out),
                "--chain", str(index + 1), str(len(gpus)), "--", *options]
        chains.append((f"chain {index + 1} on GPU {gpu}", out,
                       subprocess.Popen(argv, env=os.environ | {"CUDA_VISIBLE_DEVICES": gpu})))
    results = []
    for name, out, chain in chains:
        if chain.wait():
            print(json.dumps({"chain": name, "exit": chain.returncode}), flush=True)
        if out.is_file():
            results += json.loads(out.read_text())["runs"]
    return sorted(results, key=lambda line: line["run"])


def one_chain(args: argparse.Namespace, options: list[str]) -> list[dict]:
    results: list[dict] = []
    for index in range(args.runs):
        started = time.monotonic()
        study_dir, error = advise_once(options, args.runs_dir)
        line: dict = {"run": args.chain[0] + index * args.chain[1], "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
                      "study": study_dir.name if study_dir else None, "error": error}
        if study_dir:
            picks, line["answer"] = recommended(study_dir)
            for pick in picks:
                pick |= confirmed_by_ab(shared_options(options), pick["options"], args.ab_repeats, args.runs_dir)
            line["recommended"] = picks
            line["false"] = [p["name"] for p in picks if p["ab_verdict"] != "faster"]
        line["seconds"] = round(time.monotonic() - started)
        results.append(line)
        print(json.dumps(line), flush=True)
        if args.out:
            args.out.write_text(json.dumps({"command": shlex.join(options), "runs": results}, indent=1))
    return results


if __name__ == "__main__":
    main()

"""Does the advisor recommend a change that an independent A/B does not confirm? `sysprof advise` run N times on
one config, in fresh processes; each run's answer (the options it recommends over the baseline) is then checked by
`sysprof ab` (the baseline against those options, interleaved, its own processes). A run is a false recommendation
when its answer's A/B tokens/s verdict is not "faster".

    python3 -m benchmarks.studies.false_recommendations [--runs 10] [--ab-repeats 4] [--out FILE] -- ADVISE OPTIONS

ADVISE OPTIONS are `sysprof advise`'s (e.g. `--model tiny --device cpu --ctx 64 --steps 5 --warmup 2 --budget 3`).
Prints one JSON line per advise run, then the totals: runs with any false recommendation (target ≤ 1 of 10).
"""
from __future__ import annotations

import argparse
import json
import shlex
import time
from pathlib import Path

from benchmarks.harness import run_json, run_tool
from sysprof.profiler_core.api import study_tables


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
    parser.add_argument("advise", nargs=argparse.REMAINDER, help="-- then the advise options")
    args = parser.parse_args()
    options = [word for word in args.advise if word != "--"]
    results = []
    for index in range(args.runs):
        started = time.monotonic()
        study_dir, error = advise_once(options, args.runs_dir)
        line: dict = {"run": index + 1, "study": study_dir.name if study_dir else None, "error": error}
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
    ran = [r for r in results if r["study"]]
    totals = {"advise options": shlex.join(options), "runs": len(ran),
              "runs with a false recommendation": sum(bool(r["false"]) for r in ran),
              "runs recommending anything": sum(bool(r["recommended"]) for r in ran)}
    print(json.dumps(totals))
    if args.out:
        args.out.write_text(json.dumps({"command": shlex.join(options), "runs": results, "totals": totals}, indent=1))


if __name__ == "__main__":
    main()

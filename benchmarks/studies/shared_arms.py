"""Do arms of a shared process measure what fresh processes measure? An A/A check and an agreement check.

Each round runs, in an order reversed every other round: one shared process whose arms are K copies of the config
and one compiled arm (--compile-mode reduce-overhead, CUDA graphs), one fresh process of the config, and one fresh
process of the compiled config. Then:
- A/A: every pair of identical arms compared as `sysprof compare` compares two groups (their per-round medians as
  the processes of each side): how many pairs get a verdict (faster or slower) where none is true;
- agreement: each identical arm's median against the fresh processes' median and range, and the compiled arm's
  against its fresh processes' (CUDA graphs recorded beside other arms in one process).

  python3 -m benchmarks.studies.shared_arms --out DIR [--rounds 3] [--identical 6] [run options: --model …]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import time
from pathlib import Path

from sysprof.profiler_core.analysis.compare import compare_summaries
from sysprof.profiler_core.analysis.metrics import aggregate_processes
from sysprof.profiler_core.analysis.verdicts import FASTER, SLOWER
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.options import add_config_options, config_from_args
from sysprof.profiler_core.session.arms import run_shared
from sysprof.profiler_core.session.passes import Session


def _round(base: RunConfig, compiled: RunConfig | None, out: Path, index: int, identical: int) -> dict:
    arms = [(base, out / f"shared/{index}/a{k}") for k in range(identical)]
    arms += [(compiled, out / f"shared/{index}/compiled")] if compiled else []
    steps = [("shared", lambda: run_shared(arms, out / f"shared/{index}/process")),
             ("fresh", lambda: [_fresh(base, out / f"fresh/{index}")]),
             ("fresh_compiled", lambda: [_fresh(compiled, out / f"fresh_compiled/{index}")] if compiled else [])]
    found = {}
    for name, run in steps if index % 2 == 0 else steps[::-1]:
        started = time.time()
        found[name] = run()
        found[name + "_s"] = time.time() - started
        print(f"round {index + 1} {name}: {found[name + '_s']:.0f} s", flush=True)
    return found


def _fresh(cfg: RunConfig, path: Path) -> dict:
    path.mkdir(parents=True)
    return dict(Session(cfg, path, lambda event: None).run())


def _group(summaries: list[dict]) -> dict:
    return {**summaries[0], **aggregate_processes(summaries)}


def _rate(summary: dict) -> float | None:
    return summary.get("tokens_per_s")


def _aa(rounds: list[dict], identical: int) -> dict:
    groups = [_group([r["shared"][k] for r in rounds]) for k in range(identical)]
    verdicts = []
    for a, b in itertools.combinations(range(identical), 2):
        row = {r["phase"]: r for r in compare_summaries(groups[a], groups[b])}["tokens/s"]
        verdicts.append({"pair": [a, b], "verdict": row["verdict"], "ratio": row.get("ratio_b_over_a"),
                         "reason": row.get("reason")})
    called = sum(v["verdict"] in (FASTER, SLOWER) for v in verdicts)
    return {"pairs": len(verdicts), "verdicts_called": called, "rows": verdicts}


def _agreement(rounds: list[dict], identical: int) -> dict:
    fresh = [_rate(r["fresh"][0]) for r in rounds]
    fresh_compiled = [_rate(r["fresh_compiled"][0]) for r in rounds if r["fresh_compiled"]]
    arms = [[_rate(r["shared"][k]) for r in rounds] for k in range(identical)]
    compiled = [_rate(r["shared"][identical]) for r in rounds if len(r["shared"]) > identical]
    return {"fresh_tokens_per_s": fresh, "shared_arms_tokens_per_s": arms,
            "fresh_compiled_tokens_per_s": fresh_compiled, "shared_compiled_tokens_per_s": compiled,
            "arm_medians_over_fresh_median": [_ratio(a, fresh) for a in arms],
            "compiled_over_fresh_compiled": _ratio(compiled, fresh_compiled),
            "compiled_verdict_vs_fresh": _verdict([r["fresh_compiled"][0] for r in rounds if r["fresh_compiled"]],
                                                  [r["shared"][identical] for r in rounds
                                                   if len(r["shared"]) > identical])}


def _ratio(values: list, against: list) -> float | None:
    values, against = [v for v in values if v], [v for v in against if v]
    return statistics.median(values) / statistics.median(against) if values and against else None


def _verdict(a: list[dict], b: list[dict]) -> str | None:
    ok_a, ok_b = [s for s in a if s.get("status") == "ok"], [s for s in b if s.get("status") == "ok"]
    if len(ok_a) < 2 or len(ok_b) < 2:
        return None
    row = {r["phase"]: r for r in compare_summaries(_group(ok_a), _group(ok_b))}.get("tokens/s") or {}
    return f"{row.get('verdict')} ({row.get('reason')})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--identical", type=int, default=6)
    parser.add_argument("--no-compiled-arm", action="store_true", help="the identical arms alone (no inductor in the "
                        "shared process)")
    add_config_options(parser)
    args = parser.parse_args()
    base = validate(config_from_args(args))
    compiled = None if args.no_compiled_arm else dataclasses.replace(base, compile=True, compile_mode="reduce-overhead")
    rounds: list[dict] = []
    for index in range(args.rounds):  # the result so far after every round: a run cut short keeps its rounds
        rounds.append(_round(base, compiled, args.out, index, args.identical))
        result = {"config": base.to_dict(), "rounds": len(rounds), "identical": args.identical,
                  "seconds": [{k: v for k, v in r.items() if k.endswith("_s")} for r in rounds],
                  "aa": _aa(rounds, args.identical), "agreement": _agreement(rounds, args.identical)}
        (args.out / "shared_arms.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "aa"} | {"aa": {
        k: v for k, v in result["aa"].items() if k != "rows"}}, indent=1))


if __name__ == "__main__":
    main()

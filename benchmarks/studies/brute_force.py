"""The best config of a model by brute force, the reference an advise run is held against: each config in a fresh
process per round (`sysprof run` as a user would), the configs' order rotated every round so drift on the node hits
each alike. Prints, per config, tokens/s median and range over the rounds, × the first config's median (the
baseline), MFU and tokens per joule; writes them all to OUT/brute_force.json.

  python3 -m benchmarks.studies.brute_force --out DIR --rounds 2 \
      --configs '[{}, {"batch": 32, "dtype": "bf16", "compile": true, "compile_mode": "reduce-overhead"}]' \
      [run options of the baseline: --model-factory … --optimizer …]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from pathlib import Path

from sysprof.profiler_core.analysis.energy import tokens_per_joule
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.options import add_config_options, config_from_args
from sysprof.profiler_core.session.passes import Session
from sysprof.profiler_core.studies.kinds.advise.candidates import options_text


def _figures(summary: dict) -> dict:
    return {"status": summary.get("status"), "tokens_per_s": summary.get("tokens_per_s"), "mfu": summary.get("mfu"),
            "tokens_per_joule": tokens_per_joule(summary)}


def _order(count: int, index: int) -> list[int]:
    """Rotated by one each round: every config runs first once in `count` rounds."""
    return [(k + index) % count for k in range(count)]


def _median(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", required=True, help="JSON list of changes over the baseline; [] first is it")
    add_config_options(parser)
    args = parser.parse_args()
    base = validate(config_from_args(args))
    changes = json.loads(args.configs)
    configs = [validate(dataclasses.replace(base, **change)) for change in changes]
    found: list[list[dict]] = [[] for _ in configs]
    for index in range(args.rounds):
        for k in _order(len(configs), index):
            folder = args.out / f"config{k}" / f"round{index}"
            folder.mkdir(parents=True)
            found[k].append(_figures(dict(Session(configs[k], folder, lambda event: None).run())))
            (args.out / "brute_force.json").write_text(json.dumps(
                [{"options": options_text(c), "rounds": f} for c, f in zip(changes, found)], indent=1))
    baseline = _median([r["tokens_per_s"] for r in found[0]])
    for change, rounds in zip(changes, found):
        rates = [r["tokens_per_s"] for r in rounds if r["tokens_per_s"]]
        middle = _median(rates)
        times = f"{middle / baseline:.2f}×" if middle and baseline else "—"
        mfu, per_joule = _median([r["mfu"] for r in rounds]), _median([r["tokens_per_joule"] for r in rounds])
        print(f"{options_text(change) or '(baseline)'}: tokens/s {middle or 0:,.0f} [{min(rates, default=0):,.0f}–"
              f"{max(rates, default=0):,.0f}] {times}, MFU {mfu or 0:.1%}, tokens/J {per_joule or 0:,.0f}, "
              f"statuses {[r['status'] for r in rounds]}")


if __name__ == "__main__":
    main()

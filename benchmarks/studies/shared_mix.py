"""What do compiled arms do to the eager arms beside them in a shared process? Per round, in an order reversed every
other round: shared [A A A], shared [A A A + reduce-overhead], shared [A A A + default compile], and one fresh process
of A. Prints each eager arm's phase medians (forward, backward, optimizer, step) and tokens/s against the fresh
process's, so a slowdown can be placed in a phase.

  python3 -m benchmarks.studies.shared_mix --out DIR [--rounds 2] [run options: --model …]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from pathlib import Path

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.base.options import add_config_options, config_from_args
from sysprof.profiler_core.session.arms import run_shared
from sysprof.profiler_core.session.passes import Session

PHASES = ("forward", "backward", "optimizer", "step")


def _figures(summary: dict) -> dict:
    phases = summary.get("phases") or {}
    return {"status": summary.get("status"), "tokens_per_s": summary.get("tokens_per_s"),
            **{phase: (phases.get(phase) or {}).get("median_ms") for phase in PHASES}}


def _setups(base: RunConfig) -> dict[str, list[RunConfig]]:
    compiled = dataclasses.replace(base, compile=True)
    return {"eager_only": [base] * 3,
            "with_reduce_overhead": [base] * 3 + [dataclasses.replace(compiled, compile_mode="reduce-overhead")],
            "with_default_compile": [base] * 3 + [compiled], "fresh": [base]}


def _run(name: str, configs: list[RunConfig], folder: Path) -> list[dict]:
    if name == "fresh":
        folder.mkdir(parents=True)
        return [_figures(dict(Session(configs[0], folder, lambda event: None).run()))]
    arms = [(cfg, folder / f"arm{k}") for k, cfg in enumerate(configs)]
    return [_figures(dict(s)) for s in run_shared(arms, folder / "process")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=2)
    add_config_options(parser)
    args = parser.parse_args()
    setups = _setups(validate(config_from_args(args)))
    found: dict[str, list] = {name: [] for name in setups}
    for index in range(args.rounds):
        for name in (list(setups) if index % 2 == 0 else list(setups)[::-1]):
            found[name].append(_run(name, setups[name], args.out / f"{name}/{index}"))
            (args.out / "shared_mix.json").write_text(json.dumps(found, indent=1))
    fresh = statistics.median(r[0]["tokens_per_s"] for r in found["fresh"] if r[0]["tokens_per_s"])
    for name, rounds in found.items():
        eager = [arm for r in rounds for arm in r[:3] if arm["tokens_per_s"]]
        print(name, f"eager arms over fresh: {statistics.median(a['tokens_per_s'] for a in eager) / fresh:.3f}",
              {phase: round(statistics.median(a[phase] for a in eager if a[phase]), 2) for phase in PHASES})


if __name__ == "__main__":
    main()

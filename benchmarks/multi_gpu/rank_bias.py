"""Does one rank run slower by itself? Reads every stored `stragglers*.json` (benchmarks/multi_gpu/results) and
asks whether rank 0 is slower than the ranks nothing slowed, launch by launch.

    python3 -m benchmarks.multi_gpu.rank_bias [--results DIR]

The stored launches are packed in benchmarks/multi_gpu/results.tar.xz (`tar -xJf results.tar.xz` in that folder
unpacks them into results/); the same `stragglers*.json` are in tests/data/benchmarks/multi_gpu/results, which
`--results` can name instead.

Why: the findings' cause-less line ("rank N ran slower in this launch … the node shows no cause"; before the final
rule of 2026-11-26, "rank N is the straggler: no cause seen on the node") fell on rank 0 more often than chance would
put it (11 of 18 lines by 2026-11-27), and rank 0 is the one rank whose events go to the launcher through a pipe.
Counting lines picked after the fact proves little; the forward time and the per-step excess of every launch are
continuous measures of the same question, with far more power:

- the forward ratio: rank 0's median forward over the median of the other unslowed ranks' (rank 1 is the slowed
  one in every condition but plain), one per launch; summarised as a geometric mean with a 95% interval and a
  Wilcoxon signed-rank test on the logs;
- the share gap: rank 0's per-step excess (the straggler test's share of the step) less the others' median.

Each launch counts once (by its run directory, or by its whole record where the earliest files kept none: a JSON
copied into two files is not two launches). A cause-less line on the slowed rank (the hook before the test delay
counted as a cause) says nothing about rank 0 and is counted apart.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

RESULTS = Path(__file__).resolve().parent / "results"
CAUSELESS = re.compile(r"^rank (\d+) (?:ran slower in this launch|is the straggler: no cause seen on the node)")
SLOWED_RANK = 1  # stragglers.py puts every cause on rank 1


@dataclass(frozen=True)
class Launch:
    condition: str
    forward_ms: dict[int, float]
    share: dict[int, float]
    causeless: tuple[int, ...]  # ranks with a cause-less line (CAUSELESS: either wording)

    def unslowed(self) -> list[int]:
        return [r for r in self.forward_ms if self.condition == "plain" or r != SLOWED_RANK]


def launches(results: Path = RESULTS) -> list[Launch]:
    """Every stored launch with per-rank rows, once each."""
    seen: set[str] = set()
    found = []
    for path in sorted(results.glob("*/stragglers*.json")):
        for run in json.loads(path.read_text()).get("runs", []):
            key = run.get("run_dir") or json.dumps(run, sort_keys=True)
            if key in seen or len(run.get("rows") or []) < 2:
                continue
            seen.add(key)
            found.append(_launch(run))
    return found


def _launch(run: dict) -> Launch:
    forward = {row["rank"]: row["median_ms"]["forward"] for row in run["rows"]}
    share = {test["rank"]: test["share"] for test in run.get("tests") or [] if test.get("share") is not None}
    causeless = tuple(int(m.group(1)) for line in run.get("findings") or [] if (m := CAUSELESS.match(line)))
    return Launch(run["condition"], forward, share, causeless)


def compared(found: Iterable[Launch]) -> Iterator[tuple[float, float | None]]:
    """Per launch where rank 0 and at least one other rank were unslowed: log(rank 0's forward over the others'
    median) and rank 0's share less the others' median share (None where the test was not stored)."""
    for launch in found:
        others = [r for r in launch.unslowed() if r != 0]
        if 0 not in launch.forward_ms or not others:
            continue
        ratio = math.log(launch.forward_ms[0] / statistics.median(launch.forward_ms[r] for r in others))
        shares = [launch.share[r] for r in others if r in launch.share]
        gap = launch.share[0] - statistics.median(shares) if 0 in launch.share and shares else None
        yield ratio, gap


@dataclass
class CauselessLines:
    per_rank: Counter[int]  # lines on an unslowed rank, by rank
    chances: list[float]  # per such line, the chance it falls on rank 0: equally likely on any unslowed rank
    on_slowed: int  # lines on the slowed rank, left out of the count

    def informative(self) -> tuple[int, int, float]:
        """Lines on rank 0, lines, and chance's count, over the lines another rank could have had (in a 2-rank
        launch with rank 1 slowed, a line can only be rank 0's: it counts 1 on both sides)."""
        open_lines = [c for c in self.chances if c < 1]
        forced = len(self.chances) - len(open_lines)
        return self.per_rank[0] - forced, len(open_lines), sum(open_lines)


def causeless_counts(found: Iterable[Launch]) -> CauselessLines:
    """The cause-less lines of every launch. Two lines in one launch are taken as independent draws (one such launch
    is stored; its exact chance differs in the second decimal)."""
    lines = CauselessLines(Counter(), [], 0)
    for launch in found:
        candidates = launch.unslowed()
        for rank in launch.causeless:
            if rank not in candidates:
                lines.on_slowed += 1
                continue
            lines.per_rank[rank] += 1
            lines.chances.append(1 / len(candidates))
    return lines


def at_least(count: int, chances: list[float]) -> float:
    """P(at least `count` of the lines on rank 0) when line i falls there with chances[i] (Poisson binomial)."""
    spread = [1.0]
    for p in chances:
        spread = [a * (1 - p) + b * p for a, b in zip([*spread, 0.0], [0.0, *spread], strict=True)]
    return sum(spread[count:])


def report(found: list[Launch]) -> list[str]:
    pairs = list(compared(found))
    logs = [ratio for ratio, _ in pairs]
    mean, half = statistics.mean(logs), stats.t.ppf(0.975, len(logs) - 1) * stats.sem(logs)
    gaps = [gap for _, gap in pairs if gap is not None]
    lines = causeless_counts(found)
    by_rank = ", ".join(f"rank {r}: {n}" for r, n in sorted(lines.per_rank.items()))
    on_zero, open_lines, expected = lines.informative()
    return [
        f"{len(found)} launches; {len(pairs)} with rank 0 and another rank unslowed",
        f"rank 0's forward over the others': geometric mean {math.exp(mean):.3f} "
        f"[{math.exp(mean - half):.3f}–{math.exp(mean + half):.3f}], above 1 in {sum(x > 0 for x in logs)} of "
        f"{len(logs)}, Wilcoxon p {stats.wilcoxon(logs).pvalue:.2f}",
        f"rank 0's share of the step less the others': median {statistics.median(gaps):+.1%}, above 0 in "
        f"{sum(g > 0 for g in gaps)} of {len(gaps)}, Wilcoxon p {stats.wilcoxon(gaps).pvalue:.2f}",
        f"cause-less lines on unslowed ranks: {len(lines.chances)} ({by_rank}); "
        f"{lines.on_slowed} more on the slowed rank",
        f"of those another rank could have had: rank 0 {on_zero} of {open_lines}, chance {expected:.1f}, "
        f"{on_zero} or more with p {at_least(lines.per_rank[0], lines.chances):.3f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of DATE_MACHINE/stragglers*.json")
    args = parser.parse_args()
    found = launches(args.results)
    if not found:
        parser.error(f"no DATE_MACHINE/stragglers*.json in {args.results} (unpack results.tar.xz beside it first)")
    print("\n".join(report(found)))


if __name__ == "__main__":
    main()

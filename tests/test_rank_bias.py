"""benchmarks/multi_gpu/rank_bias.py: the stored straggler launches read once each, their cause-less lines counted
as the findings wrote them, and the chance of a count computed right. The stored `stragglers*.json` are read from
tests/data/benchmarks/multi_gpu/results (the same files as in benchmarks/multi_gpu/results.tar.xz)."""
from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.multi_gpu.rank_bias import at_least, causeless_counts, compared, launches, report

RESULTS = Path(__file__).resolve().parent / "data" / "benchmarks" / "multi_gpu" / "results"


def test_every_stored_launch_counts_once_and_every_causeless_line_is_counted_on_its_rank():
    found = launches(RESULTS)
    stored = [run for path in RESULTS.glob("*/stragglers*.json") for run in json.loads(path.read_text())["runs"]
              if len(run.get("rows") or []) >= 2]
    named = {run["run_dir"]: run for run in stored if run.get("run_dir")}
    unnamed = [run for run in stored if not run.get("run_dir")]  # the earliest files kept no run directory
    assert len(found) == len(named) + len(unnamed) >= 180
    on_rank: Counter[int] = Counter()
    slowed = 0
    for run in [*named.values(), *unnamed]:
        for line in run["findings"]:
            if "ran slower in this launch" in line or "is the straggler: no cause seen" in line:
                rank = int(line.split()[1])
                if rank == 1 and run["condition"] != "plain":
                    slowed += 1
                else:
                    on_rank[rank] += 1
    lines = causeless_counts(found)
    assert lines.per_rank == on_rank and lines.on_slowed == slowed >= 1 and sum(on_rank.values()) >= 25


def test_a_causeless_line_on_the_slowed_rank_is_counted_apart_and_a_forced_one_carries_no_weight(tmp_path):
    def run(condition: str, world: int, lines: list[str]) -> dict:
        rows = [{"rank": r, "median_ms": {"forward": 10.0 + r}} for r in range(world)]
        return {"condition": condition, "findings": lines, "rows": rows, "tests": []}
    old = "rank {} is the straggler: no cause seen on the node (its GPU unshared)"
    new = "rank {} ran slower in this launch (slower in 15 of 20 steps) but the node shows no cause"
    (tmp_path / "day").mkdir()
    (tmp_path / "day" / "stragglers_x.json").write_text(json.dumps({"runs": [
        run("hook", 2, [old.format(1)]),  # on the slowed rank: says nothing about rank 0
        run("light", 2, [new.format(0)]),  # rank 0 the only unslowed rank: forced
        run("plain", 4, [new.format(0), old.format(3)])]}))
    lines = causeless_counts(launches(tmp_path))
    assert lines.on_slowed == 1 and lines.per_rank == Counter({0: 2, 3: 1})
    assert lines.chances == [1.0, 0.25, 0.25]
    assert lines.informative() == (1, 2, 0.5)
    assert at_least(lines.per_rank[0], lines.chances) == pytest.approx(at_least(1, [0.25, 0.25]))


def test_a_launch_copied_into_a_second_file_is_not_a_second_launch(tmp_path):
    source = next(RESULTS.glob("*/stragglers_small_4ranks_3.json"))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(source, tmp_path / name / "stragglers_copy.json")
    assert len(launches(tmp_path)) == len(json.loads(source.read_text())["runs"]) == 10


def test_rank_1_is_left_out_of_the_comparison_where_it_was_slowed():
    found = launches(RESULTS)
    two_rank_slowed = [launch for launch in found if len(launch.forward_ms) == 2 and launch.condition != "plain"]
    assert two_rank_slowed and not list(compared(two_rank_slowed))  # rank 0 has no unslowed rank to compare with
    assert all(launch.unslowed() == [0, 2, 3] for launch in found
               if len(launch.forward_ms) == 4 and launch.condition == "hook")


@pytest.mark.parametrize(("count", "chances", "expected"), [
    (0, [0.3, 0.9], 1.0), (1, [0.5], 0.5), (2, [0.5, 0.5], 0.25), (1, [0.5, 0.5], 0.75), (3, [1.0] * 3, 1.0),
    (2, [1 / 3] * 3, 7 / 27)])
def test_the_chance_of_so_many_lines_on_rank_0_is_the_poisson_binomial_tail(count, chances, expected):
    assert at_least(count, chances) == pytest.approx(expected)


def test_the_report_gives_each_measure_its_interval_or_test():
    text = report(launches(RESULTS))
    assert len(text) == 5 and all(len(line) <= 120 for line in text)
    assert re.search(r"geometric mean \d\.\d{3} \[\d\.\d{3}–\d\.\d{3}\], above 1 in \d+ of \d+, Wilcoxon p", text[1])
    assert re.search(r"rank 0 \d+ of \d+, chance \d+\.\d, \d+ or more with p 0\.\d{3}$", text[4])

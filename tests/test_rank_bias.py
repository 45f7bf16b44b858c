"""benchmarks/multi_gpu/rank_bias.py: the stored straggler launches read once each, their cause-less lines counted
as the findings wrote them, and the chance of a count computed right."""
from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.multi_gpu.rank_bias import RESULTS, at_least, causeless_counts, compared, launches, report


def test_every_stored_launch_counts_once_and_every_causeless_line_is_counted():
    found = launches()
    stored = [run for path in RESULTS.glob("*/stragglers*.json") for run in json.loads(path.read_text())["runs"]
              if len(run.get("rows") or []) >= 2]
    named = {run["run_dir"]: run for run in stored if run.get("run_dir")}
    unnamed = [run for run in stored if not run.get("run_dir")]  # the first sessions' files kept no run directory
    assert len(found) == len(named) + len(unnamed) >= 160
    lines = [sum("ran slower in this launch" in f for f in run["findings"]) for run in [*named.values(), *unnamed]]
    per_rank, chances = causeless_counts(found)
    assert sum(per_rank.values()) == len(chances) == sum(lines) >= 20


def test_a_launch_copied_into_a_second_file_is_not_a_second_launch(tmp_path):
    source = next(RESULTS.glob("*/stragglers_small_4ranks_session28.json"))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(source, tmp_path / name / "stragglers_copy.json")
    assert len(launches(tmp_path)) == len(json.loads(source.read_text())["runs"]) == 10


def test_rank_1_is_left_out_of_the_comparison_where_it_was_slowed():
    found = launches()
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
    text = "\n".join(report(launches()))
    assert "geometric mean" in text and "Wilcoxon p" in text and "chance puts" in text
    assert all(len(line) <= 120 for line in text.splitlines())

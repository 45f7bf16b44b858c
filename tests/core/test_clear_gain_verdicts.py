"""A reported advise on a CPU: batch 8 was 2.68× [2.58–2.86] once, then measured again "3.24× [0.03–17.59], p=0.34"
and answered "none: … noise, not a gain". Those three numbers are reproduced exactly by the rank test and bootstrap
of verdicts.verdict on 4 processes a side, one of them far off on each side (baseline 1,480, 6,974, 9,100 and 10,207
tokens/s; batch 8 205, 25,969, 26,100 and 27,944): U = 12 of 16. A fully separated 4 against 4 is faster (p=0.029).
What was wrong is the answer: a second measurement whose interval still holds the first's gain cannot tell, and is
not evidence of noise."""
from __future__ import annotations

import itertools
import json
import shutil
import statistics
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.verdicts import FASTER, SLOWER, WITHIN_NOISE, verdict
from sysprof.profiler_core.studies.kinds.advise import cell_verdicts as advise_verdicts
from sysprof.profiler_core.studies.kinds.advise import tables as advise_tables
from sysprof.profiler_core.studies.results import study_tables

BASELINE = [1480.0, 6974.0, 9100.0, 10207.0]  # tokens/s per process, run order: the first one far off
BATCH_8 = [205.0, 25969.0, 26100.0, 27944.0]
SEPARATED_BASELINE = [6974.0, 8120.0, 9100.0, 10207.0]  # the report's ranges, every process within them
SEPARATED_BATCH_8 = [25969.0, 26100.0, 27300.0, 27944.0]
TINY_CPU = Path(__file__).resolve().parents[1] / "data" / "studies" / "advise-tiny-cpu"


def test_a_fully_separated_gain_with_4_processes_a_side_is_faster():
    found = verdict(SEPARATED_BASELINE, SEPARATED_BATCH_8, higher_is_better=True)
    assert found["verdict"] == FASTER and found["test"] == "Mann-Whitney U"
    assert found["p_value"] == pytest.approx(2 / 70)  # the smallest p of 4 against 4: all 16 pairs one way
    assert 2.5 < found["ci_low"] < 3.0 < found["ci_high"] < 4.1


def test_one_far_off_process_a_side_gives_the_reported_numbers_and_is_named():
    found = verdict(BASELINE, BATCH_8, higher_is_better=True)
    assert statistics.median(BATCH_8) / statistics.median(BASELINE) == pytest.approx(3.24, abs=0.005)
    assert (found["verdict"], found["test"]) == (WITHIN_NOISE, "Mann-Whitney U")
    assert found["p_value"] == pytest.approx(24 / 70)  # U = 12 of 16
    assert (round(found["ci_low"], 2), round(found["ci_high"], 2)) == (0.03, 17.59)
    assert found["reason"] == ("not significant, p=0.34; far from its side's others: A's process 1 6.15× below, "
                               "B's process 1 127× below")


def test_same_config_pairs_of_those_8_processes_are_called_faster_or_slower_only_when_fully_separated():
    """The 8 values as one config's processes: every split of 4 and 4 is as likely. The verdict calls at most the 2
    fully separated ones of the 70 (p = 2/70); calling the reported split faster would add it and its mirror."""
    values = sorted(BASELINE + BATCH_8)
    called = {}
    for picked in itertools.combinations(range(8), 4):
        side_a = [values[i] for i in picked]
        side_b = [values[i] for i in range(8) if i not in picked]
        found = verdict(side_a, side_b, higher_is_better=True)["verdict"]
        if found in (FASTER, SLOWER):
            called[tuple(side_b)] = found
    assert called[tuple(values[4:])] == FASTER  # B the 4 highest
    assert set(called) <= {tuple(values[4:]), tuple(values[:4])}  # (B the 4 lowest: 6.2× slower, below the spread)


def _set_rates(cell_dir: Path, rates: list[float]) -> None:
    """A group summary's per-process tokens/s (what compare reads) and their median."""
    path = cell_dir / "summary.json"
    summary = json.loads(path.read_text())
    for process, rate in zip(summary["repeats"]["processes"], rates, strict=True):
        process["tokens_per_s"] = rate
    summary["tokens_per_s"] = statistics.median(rates)
    path.write_text(json.dumps(summary))


def _advise_with(tmp_path: Path, again: tuple[list[float], list[float]]) -> dict[str, list[dict]]:
    """The saved CPU advise (candidate batch 16, measured again on its own), its tokens/s per process replaced: a
    clear gain once (2.68×), then the processes given measured again."""
    study_dir = tmp_path / "advise"
    shutil.copytree(TINY_CPU, study_dir)
    cells = sorted((study_dir / "cells").iterdir())
    for index, rates in ((1, [9650.0, 10020.0, 9880.0, 10310.0]), (2, [26200.0, 26900.0, 26500.0, 27400.0]),
                         (6, again[0]), (7, again[1])):
        _set_rates(cells[index], rates)
    return study_tables(study_dir)


def test_a_second_measurement_that_cannot_tell_is_not_called_noise(tmp_path):
    tables = _advise_with(tmp_path, (BASELINE, BATCH_8))
    first = next(row for row in tables[advise_tables.CANDIDATES_TABLE] if row["candidate"] == "batch 16")
    assert first["tokens/s ×"].startswith("2.68 [") and first["why"] == advise_verdicts.PASSED
    again = tables[advise_tables.COMBINATION_TABLE][1]
    assert again["× baseline"] == "3.24 [0.03–17.59]"
    [answer] = tables["recommended"]
    assert answer["command"] is None and "noise, not a gain" not in answer["answer"]
    assert answer["answer"].startswith("none confirmed: batch 16 was faster (2.68 [")
    assert "measured again 3.24 [0.03–17.59], an interval that still holds that gain" in answer["answer"]
    assert answer["answer"].endswith("too noisy to tell, not shown to be noise (`sysprof ab` measures it again)")
    assert again["why"] == ("not faster beyond run-to-run noise (not significant, p=0.34; far from its side's "
                            "others: A's process 1 6.15× below, B's process 1 127× below; 4 processes a side)")


def test_a_second_measurement_that_rules_the_gain_out_is_still_noise(tmp_path):
    """The same first stage; measured again, batch 16 at the baseline's tokens/s, its interval far below 2.68."""
    tables = _advise_with(tmp_path, ([9700.0, 10050.0, 9900.0, 10200.0], [9800.0, 10100.0, 9750.0, 10250.0]))
    again = tables[advise_tables.COMBINATION_TABLE][1]
    assert again["why"].startswith(advise_verdicts.NOT_FASTER) and "far from" not in again["why"]
    [answer] = tables["recommended"]
    assert answer["answer"].startswith("none: batch 16 was faster (2.68 [")
    assert answer["answer"].endswith("and not when measured again: noise, not a gain")

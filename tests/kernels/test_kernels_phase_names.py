"""Phases from a user's own profile (tests/data/foreign_nvtx: real nsys output of a training loop that calls its
ranges `fwd`, `bwd`, `opt`, `train step N` and leaves one range open): known aliases, --phase, the ranges listed
when none match, unbalanced ranges named; the sqlite and the stats CSVs give the same phases."""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from sysprof.models.phases import phase_option
from sysprof.profiler_core.kernels import analyze_sqlite, analyze_stats_dir
from sysprof.profiler_core.kernels.phase_names import drop_unbalanced, rename_phase_ranges

FOREIGN = Path(__file__).resolve().parents[1] / "data" / "foreign_nvtx"
PUBLIC = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "nsys_public"
PHASES = {"forward": (832276, 25), "backward": (900852, 50), "optimizer": (1386494, 40), "other": (0, 0)}


def phases(analysis: dict) -> dict:
    return {phase: (row["gpu_ns"], row["kernels"]) for phase, row in analysis["phases"].items()}


def test_fwd_bwd_opt_and_train_step_n_are_the_phases_and_steps(foreign_sqlite):
    from_sqlite = analyze_sqlite(foreign_sqlite)
    assert phases(from_sqlite) == PHASES
    assert len(from_sqlite["steps"]) == 5  # `train step N` read as the tool's `step N`
    assert ("phase ranges used: forward ← 'fwd' (5); backward ← 'bwd' (5); optimizer ← 'opt' (5); "
            "step N ← ranges like 'train step N' (5)") in from_sqlite["notes"]
    from_csvs = analyze_stats_dir(FOREIGN)
    assert phases(from_csvs) == PHASES  # the CSVs, autograd thread included, agree with the sqlite
    assert any(note.startswith("phase ranges used: ") and "forward ← 'fwd'" in note for note in from_csvs["notes"])


def test_a_range_left_open_is_named_and_kept_out(foreign_sqlite):
    [note] = [n for n in analyze_sqlite(foreign_sqlite)["notes"] if n.startswith("unbalanced")]
    assert "'profiling' (0.014 s)" in note and "capture's 0.010 s of kernels" in note
    [note] = [n for n in analyze_stats_dir(FOREIGN)["notes"] if n.startswith("unbalanced")]
    assert "'profiling' (14.207 ms)" in note and "all 5 step ranges together (9.912 ms)" in note


def test_phase_option_names_the_ranges_and_says_what_it_did_not_find(foreign_sqlite):
    assert phase_option("forward=fwd, backward = bwd,optimizer=opt") == {
        "forward": "fwd", "backward": "bwd", "optimizer": "opt"}
    for bad, reason in (("forwrd=fwd", "'forwrd' is not a phase"), ("forward", "expected PHASE=RANGE NAME"),
                        ("", "expected PHASE=RANGE NAME")):
        with pytest.raises(ValueError, match=reason):
            phase_option(bad)
    named = analyze_sqlite(foreign_sqlite, {"forward": "fwd", "backward": "bwd", "optimizer": "opt"})
    assert phases(named) == PHASES
    # A chosen name replaces that phase's aliases: `bwd` is no longer taken for backward.
    wrong = analyze_sqlite(foreign_sqlite, {"backward": "backprop"})
    assert wrong["phases"]["backward"]["kernels"] == 0 and wrong["phases"]["other"]["kernels"] == 50
    assert "--phase backward='backprop': no range of that name in this profile" in wrong["notes"]
    assert "no range found for backward: name it with --phase backward=NAME" in wrong["notes"]


@pytest.mark.skipif(not PUBLIC.is_dir(), reason="../shared/fixtures is not beside this checkout")
def test_with_no_phase_range_the_ranges_found_are_listed():
    analysis = analyze_stats_dir(PUBLIC, prefix="kiln_2024.5.1")
    [note] = [n for n in analysis["notes"] if n.startswith("no forward, backward or optimizer range recognised")]
    assert "ranges found: " in note and note.endswith("--phase forward=NAME,backward=NAME,optimizer=NAME")


def test_renaming_leaves_the_tools_own_names_alone():
    names = pd.Series(["forward", "backward", "optimizer step", "step 0", "computing softmax"])
    renamed, notes = rename_phase_ranges(names)
    assert renamed.tolist() == names.tolist() and notes == []


def test_drop_unbalanced_keeps_ranges_within_the_capture():
    kernels = pd.DataFrame({"start": [100, 500], "end": [200, 900]})  # 800 ns of capture
    ranges = pd.DataFrame({"start": [90, 0], "end": [890, 5_000_000_000], "name": ["step 0", "session"],
                           "global_tid": [1, 1]})
    kept, [note] = drop_unbalanced(ranges, kernels)
    assert kept["name"].tolist() == ["step 0"] and "'session' (5.000 s)" in note


@pytest.mark.slow
def test_cli_phase_and_prefix_errors_are_one_line(cli_env):
    import subprocess
    import sys

    def analyze(*args):
        return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "analyze", *args], env=cli_env,
                              capture_output=True, text=True, timeout=120)

    for args, reason in (((str(FOREIGN), "--phase", "forwrd=fwd"), "'forwrd' is not a phase"),
                         ((str(FOREIGN), "--prefix", "other"), "has no stats set 'other' (it holds: 'foreign')"),
                         ((str(FOREIGN / "foreign_nvtx_sum.csv"), "--prefix", "foreign"), "--prefix names a set")):
        result = analyze(*args)
        assert result.returncode == 2 and reason in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    named = analyze(str(FOREIGN), "--prefix", "foreign", "--phase", "forward=fwd,backward=bwd,optimizer=opt")
    assert named.returncode == 0 and "phase ranges used" in named.stdout


@pytest.mark.gpu
def test_a_users_nsys_rep_is_exported_with_nsys_and_read(tmp_path):
    """The .nsys-rep itself: exported to sqlite with the machine's nsys (the GPU machine has one), then read."""
    from sysprof.profiler_core.kernels.nsys.locate import find_nsys
    from sysprof.profiler_core.readers.analyze import analyze_path

    if find_nsys() is None:
        pytest.skip("needs nsys")
    report = tmp_path / "foreign.nsys-rep"
    shutil.copy(FOREIGN / "foreign.nsys-rep", report)
    assert phases(analyze_path(report)) == PHASES

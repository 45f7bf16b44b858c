"""Phase tables that cannot exceed their capture, on a real nsys capture of a user's loop whose
`fwd` range is pushed every step and never popped (tests/data/user_scripts/unpopped_fwd.py, 8 steps on an H100):
nvtx_kern_sum counts forward's kernels once per enclosing `fwd`, 48.1 ms of a 15.8 ms capture."""
from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from sysprof.models.phases import ATTRIBUTED_PHASES, PHASES
from sysprof.profiler_core.kernels.capture_check import WITHHELD, fit_to_capture
from sysprof.profiler_core.readers.analyze import analyze_path
from sysprof.profiler_core.tables.run_tables import phase_kernel_model

CAPTURE = Path(__file__).resolve().parents[1] / "data" / "nsys" / "unpopped_fwd"
CAPTURE_NS, CAPTURE_KERNELS = 15_811_027, 425  # every kernel of the capture (the sqlite export's sum)


@pytest.fixture(scope="module")
def from_sqlite(tmp_path_factory) -> dict:
    sqlite = tmp_path_factory.mktemp("capture") / "unpopped_fwd.sqlite"
    sqlite.write_bytes(lzma.decompress((CAPTURE / "unpopped_fwd.sqlite.xz").read_bytes()))
    return analyze_path(sqlite)


@pytest.fixture(scope="module")
def from_stats() -> dict:
    return analyze_path(CAPTURE)


def test_the_stats_csvs_withhold_the_phase_that_double_counts_and_name_its_range(from_stats):
    phases = from_stats["phases"]
    assert from_stats["totals"] == {"gpu_ns": CAPTURE_NS, "kernels": CAPTURE_KERNELS}
    assert WITHHELD in phases["forward"] and "'fwd' nests in itself" in phases["forward"][WITHHELD]
    assert any(note.startswith("forward: its kernels add up to 48.1 ms") for note in from_stats["notes"])
    for phase in ATTRIBUTED_PHASES:
        assert phases[phase]["gpu_ns"] <= CAPTURE_NS and phases[phase]["kernels"] <= CAPTURE_KERNELS
    assert sum(phases[p]["gpu_ns"] for p in ATTRIBUTED_PHASES) == CAPTURE_NS  # every kernel once, forward's in other


def test_what_is_left_agrees_with_the_sqlite_export_of_the_same_capture(from_stats, from_sqlite):
    for phase in ("backward", "optimizer", "other"):
        assert from_stats["phases"][phase]["gpu_ns"] == from_sqlite["phases"][phase]["gpu_ns"]
        assert from_stats["phases"][phase]["kernels"] == from_sqlite["phases"][phase]["kernels"]


def test_the_sqlite_export_leaves_the_unpopped_ranges_out_and_says_so(from_sqlite):
    phases = from_sqlite["phases"]
    assert sum(phases[p]["gpu_ns"] for p in ATTRIBUTED_PHASES) == CAPTURE_NS
    assert phases["forward"]["kernels"] == 0 and not any(WITHHELD in phases[p] for p in PHASES)
    assert any(note.startswith("unbalanced NVTX ranges left out: 'fwd' (1.169 s)") and "never popped" in note
               for note in from_sqlite["notes"])


def test_the_table_shows_the_withheld_phase_without_a_number(from_stats):
    model = phase_kernel_model(from_stats)
    forward = next(row for row in model.rows if row["phase"] == "forward")
    assert model.cells(forward)[1:4] == ["N/A", "N/A", "N/A"] and "withheld" in forward["top_classes"]
    step = next(row for row in model.rows if row["phase"] == "step")
    assert step["gpu_ms"] is None and "withheld" in step["top_classes"]  # no sum that leaves forward out


def test_phases_that_fit_alone_but_overlap_together_are_withheld_with_one_reason():
    phases = {"forward": {"gpu_ns": 60, "kernels": 6}, "backward": {"gpu_ns": 70, "kernels": 7},
              "optimizer": {"gpu_ns": 0, "kernels": 0}}
    notes = fit_to_capture(phases, capture_ns=100, capture_kernels=20)
    assert len(notes) == 1 and "their ranges overlap" in notes[0]
    assert WITHHELD in phases["forward"] and WITHHELD in phases["backward"] and WITHHELD not in phases["optimizer"]


def test_a_stats_set_whose_nvtx_kernel_report_is_empty_still_analyses(tmp_path):
    """The real set with nvtx_kern_sum cut to its header (a capture without NVTX ranges on kernels)."""
    for source in CAPTURE.glob("unpopped_fwd_*.csv"):
        text = source.read_text()
        (tmp_path / source.name).write_text(text.splitlines()[0] + "\n" if "nvtx_kern_sum" in source.name else text)
    analysis = analyze_path(tmp_path)
    assert analysis["phases"]["other"]["gpu_ns"] == CAPTURE_NS and analysis["phases"]["forward"]["kernels"] == 0

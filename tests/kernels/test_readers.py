"""The readers registry: every real input is claimed by its own reader, `analyze` reads through it, the profiled
pass's backends read through the same readers, and a reader added to the registry is all a new format needs."""
from __future__ import annotations

import lzma
import shutil
from pathlib import Path

import pytest

from sysprof.profiler_core import readers
from sysprof.profiler_core.base.errors import AnalyzeError
from sysprof.profiler_core.kernels.summary import analyze_sqlite
from sysprof.profiler_core.readers import ReadOptions, reader_for
from sysprof.profiler_core.readers.analyze import analyze_path
from sysprof.profiler_core.session.backends.nsys_backend import NsysBackend
from sysprof.profiler_core.session.backends.torch_backend import TorchBackend

TESTS = Path(__file__).resolve().parents[1]
SHARED = TESTS.parents[1] / "shared" / "fixtures" / "h200_small_fp32"
TORCH_TRACE_XZ = TESTS / "data" / "traces" / "torch_trace_small_bf16.json.xz"


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("trace") / "torch_trace.json"
    with lzma.open(TORCH_TRACE_XZ) as compressed, open(target, "wb") as out:
        shutil.copyfileobj(compressed, out)
    return target


def test_each_real_input_is_claimed_by_its_own_reader(h200_sqlite, torch_trace, tmp_path):
    if not SHARED.is_dir():
        pytest.skip("../shared/fixtures is not beside this checkout")
    report = tmp_path / "profile.nsys-rep"
    report.write_bytes(b"")  # claimed by name: the export with nsys decides whether it is a report
    expected = {TESTS / "data" / "runs" / "small-h200-analyses": "run-dir", SHARED: "nsys-stats",
                h200_sqlite: "nsys-sqlite", report: "nsys-rep", torch_trace: "torch",
                SHARED / "memory_snapshot.pickle.xz": "memory-snapshot"}
    assert {path: getattr(reader_for(path), "name", None) for path in expected} == expected
    assert reader_for(TESTS / "data" / "runs" / "tiny-ctx32" / "steps.jsonl") is None


def test_analyze_reads_through_the_registry_as_the_readers_themselves_do(h200_sqlite):
    assert analyze_path(h200_sqlite) == analyze_sqlite(h200_sqlite)
    assert analyze_path(h200_sqlite)["source_kind"] == "nsys-sqlite"


def test_a_path_no_reader_claims_names_every_input_there_is(tmp_path):
    stray = tmp_path / "notes.txt"
    stray.write_text("hello")
    with pytest.raises(AnalyzeError) as raised:
        analyze_path(stray)
    assert str(raised.value) == (f"{stray}: expected a run directory, stats directory, .sqlite, .nsys-rep, "
                                 "torch trace .json or memory snapshot .pickle")


def test_a_reader_added_to_the_registry_is_all_a_new_format_needs(monkeypatch, tmp_path):
    class CsvTimeline:
        name, what = "timeline", "timeline .tl"

        def claims(self, path: Path) -> bool:
            return path.suffix == ".tl"

        def read(self, path: Path, options: ReadOptions) -> dict:
            return {"source": str(path), "source_kind": self.name, "lines": len(path.read_text().splitlines())}

    monkeypatch.setattr(readers, "READERS", (*readers.READERS, CsvTimeline()))
    timeline = tmp_path / "run.tl"
    timeline.write_text("a\nb\n")
    assert analyze_path(timeline) == {"source": str(timeline), "source_kind": "timeline", "lines": 2}
    assert readers.expected_inputs().endswith("memory snapshot .pickle or timeline .tl")


def test_the_profiled_pass_reads_its_outputs_through_the_same_readers(monkeypatch, tmp_path):
    read = []
    monkeypatch.setattr(readers.TORCH_TRACE_READER, "attribute", lambda path, phase_names=None: read.append(path))
    TorchBackend().attribute(tmp_path)
    assert read == [tmp_path / "torch_trace.json"]
    monkeypatch.setattr(readers.NSYS_SQLITE_READER, "attribute", lambda path, phase_names=None: read.append(path))
    import sysprof.profiler_core.session.backends.nsys_backend as nsys_backend

    class Exported:
        ok, error, sqlite_path = True, None, tmp_path / "profile.sqlite"

    monkeypatch.setattr(nsys_backend, "export_report", lambda nsys, pass_dir: Exported())
    monkeypatch.setattr(nsys_backend, "StatsJob", lambda *args: None)
    NsysBackend(Path("nsys")).attribute(tmp_path)
    assert read[-1] == tmp_path / "profile.sqlite"

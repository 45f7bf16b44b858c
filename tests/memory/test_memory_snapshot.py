"""Loading snapshots: plain and compressed, no torch, one-line SnapshotError for anything else."""
from __future__ import annotations

import bz2
import gzip
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.memory import SnapshotError, load_snapshot
from sysprof.profiler_core.memory.snapshot import ForeignObject

ROOT = Path(__file__).resolve().parents[2]


def test_real_snapshot_has_expected_structure(snapshot):
    trace = snapshot["device_traces"][0]
    assert len(snapshot["segments"]) == 170
    assert len(trace) == 11226
    assert {event["action"] for event in trace} == {"alloc", "free_requested", "free_completed"}
    assert all("time_us" in event and "frames" in event for event in trace)


def test_xz_gzip_bz2_and_plain_load_the_same(snapshot, snapshot_path, snapshot_xz_path, tmp_path):
    raw = snapshot_path.read_bytes()
    (tmp_path / "renamed.bin").write_bytes(gzip.compress(raw, compresslevel=1))  # magic bytes, not the name
    (tmp_path / "s.pickle.bz2").write_bytes(bz2.compress(raw, compresslevel=1))
    for path in (snapshot_xz_path, tmp_path / "renamed.bin", tmp_path / "s.pickle.bz2"):
        loaded = load_snapshot(path)
        assert len(loaded["device_traces"][0]) == len(snapshot["device_traces"][0])
        assert loaded["segments"][0]["address"] == snapshot["segments"][0]["address"]


@pytest.mark.parametrize("content", [
    b"",
    b"definitely not a pickle",
    b"\xfd7zXZ\x00 truncated xz stream",
    pickle.dumps([1, 2, 3]),
    pickle.dumps({"device_traces": []}),
    pickle.dumps({"segments": "nope"}),
], ids=["empty", "text", "bad-xz", "list", "no-segments", "segments-not-list"])
def test_non_snapshots_raise_one_line_snapshot_error(tmp_path, content):
    path = tmp_path / "bad.pickle"
    path.write_bytes(content)
    with pytest.raises(SnapshotError) as caught:
        load_snapshot(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message


def test_truncated_real_snapshot_raises(snapshot_path, tmp_path):
    path = tmp_path / "truncated.pickle"
    path.write_bytes(snapshot_path.read_bytes()[:100_000])
    with pytest.raises(SnapshotError, match="not a readable pickle"):
        load_snapshot(path)


def test_missing_file_raises(tmp_path):
    with pytest.raises(SnapshotError, match="cannot read"):
        load_snapshot(tmp_path / "absent.pickle")


class _Exploit:
    def __reduce__(self):
        return (subprocess.call, (["true"],))


def test_code_execution_pickles_are_refused(tmp_path):
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "x": _Exploit()}))
    with pytest.raises(SnapshotError, match="refused to load subprocess.call"):
        load_snapshot(path)


def test_torch_classes_become_harmless_stand_ins(tmp_path):
    # A hand-written protocol-0 pickle referencing torch.Size, as if a snapshot carried one.
    payload = b"(dp0\nVsegments\np1\n(lp2\nsVshape\np3\nctorch\nSize\np4\n(I2\nI3\ntp5\nRp6\ns."
    path = tmp_path / "with_torch.pickle"
    path.write_bytes(payload)
    loaded = load_snapshot(path)
    assert isinstance(loaded["shape"], ForeignObject)
    assert "torch.Size" in repr(loaded["shape"]) and loaded["shape"].args == (2, 3)


def test_memory_package_imports_neither_torch_nor_textual():
    code = ("import sys, sysprof.profiler_core.memory, sysprof.profiler_core.memory.analyze; "
            "bad = [m for m in ('torch', 'textual') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

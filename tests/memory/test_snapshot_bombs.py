"""A memory snapshot is somebody else's file: one that claims gigabytes (a pickle memo index of 2**27 in 9 bytes, a
gzip of zeros that expands 1000×) is refused in one line before it takes the machine's memory, and the real
snapshot still opens whatever its compression."""
from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib

import pytest

from sysprof.profiler_core.base.errors import SnapshotError
from sysprof.profiler_core.memory.snapshot import load_snapshot


def zeros_gzipped(mebibytes: int) -> bytes:
    """A gzip of that many MiB of zeros, made a MiB at a time (the test never holds them all)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(2**20)
    return b"".join(packer.compress(chunk) for _ in range(mebibytes)) + packer.flush()


def test_a_pickle_whose_memo_claims_gigabytes_is_refused(tmp_path):
    bomb = tmp_path / "memory_snapshot.pickle"
    bomb.write_bytes(b"\x80\x04}r" + struct.pack("<I", 2**27) + b".")  # an empty dict put at memo index 2**27
    with pytest.raises(SnapshotError, match="asks for more than .* GiB to unpickle .*not a plausible snapshot"):
        load_snapshot(bomb)


def test_a_file_that_expands_without_bound_is_refused(tmp_path):
    bomb = tmp_path / "memory_snapshot.pickle.gz"
    bomb.write_bytes(zeros_gzipped(200))  # 200 KiB on disk
    with pytest.raises(SnapshotError, match="expands past 64 MiB .*refused as a decompression bomb"):
        load_snapshot(bomb)


@pytest.mark.parametrize("compress", [lambda data: data, gzip.compress, bz2.compress, lzma.compress])
def test_the_real_snapshot_opens_in_every_compression(tmp_path, shared_fixtures, compress):
    raw = lzma.decompress((shared_fixtures / "h200_small_fp32" / "memory_snapshot.pickle.xz").read_bytes())
    path = tmp_path / "memory_snapshot.pickle"
    path.write_bytes(compress(raw))
    assert len(load_snapshot(path)["segments"]) == 170


def test_a_cut_gzip_is_corrupt_data_in_one_line(tmp_path, shared_fixtures):
    raw = lzma.decompress((shared_fixtures / "h200_small_fp32" / "memory_snapshot.pickle.xz").read_bytes())
    path = tmp_path / "memory_snapshot.pickle.gz"
    path.write_bytes(gzip.compress(raw)[:5000])
    with pytest.raises(SnapshotError, match="corrupt compressed data"):
        load_snapshot(path)

"""Property-based: every kind of file the tool reads, truncated or bit-flipped, gives an answer or a one-line
reason: real nsys sqlite and stats CSVs, a real allocator snapshot pickle, a real torch.profiler trace, and the
JSON(L) files of a real run directory. Never a traceback."""
from __future__ import annotations

import io
import lzma
import re
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.errors import SysprofError
from sysprof.profiler_core.cli import main as cli

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = DATA / "runs" / "small-h200-analyses"
ONE_LINE = re.compile(r"^sysprof( [\w-]+)*: error: \S")
FUZZ = settings(deadline=None, database=None, derandomize=True, max_examples=40,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@st.composite
def damage(draw) -> tuple[str, float, list[tuple[float, int]]]:
    """Truncate at a fraction of the file, or flip a few bits at fractions of it."""
    if draw(st.booleans()):
        return "truncate", draw(st.floats(0, 1, exclude_max=True)), []
    flips = draw(st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)), min_size=1, max_size=8))
    return "flip", 0.0, flips


def damaged(data: bytes, how: tuple[str, float, list[tuple[float, int]]]) -> bytes:
    kind, cut, flips = how
    if kind == "truncate":
        return data[:int(len(data) * cut)]
    buffer = bytearray(data)
    for where, bit in flips:
        buffer[int(len(buffer) * where)] ^= 1 << bit
    return bytes(buffer)


def analyze(target: Path, *options: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(["analyze", str(target), "--json", *options])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


def assert_answered(code: int, stderr: str, how) -> None:
    assert "Traceback" not in stderr, (how, stderr)
    if code:
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and ONE_LINE.match(lines[0]), (how, stderr)


def unpacked(source: Path, folder: Path) -> bytes:
    target = folder / source.name.removesuffix(".xz")
    if not target.exists():
        target.write_bytes(lzma.decompress(source.read_bytes()) if source.suffix == ".xz" else source.read_bytes())
    return target.read_bytes()


@pytest.fixture(scope="module")
def originals(tmp_path_factory, shared_fixtures) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("originals")
    h200 = shared_fixtures / "h200_small_fp32"
    return {"report.sqlite": unpacked(h200 / "report.sqlite.xz", folder),
            "memory_snapshot.pickle": unpacked(h200 / "memory_snapshot.pickle.xz", folder),
            "torch_trace.json": unpacked(DATA / "traces" / "torch_trace_small_bf16.json.xz", folder)}


@pytest.mark.parametrize("name", ["report.sqlite", "memory_snapshot.pickle"])
def test_a_damaged_report_or_snapshot_is_analysed_or_refused_in_one_line(name, originals, tmp_path):
    @FUZZ
    @given(damage())
    def check(how):
        target = tmp_path / name
        target.write_bytes(damaged(originals[name], how))
        assert_answered(*analyze(target), how)
    check()


def test_a_damaged_torch_trace_is_analysed_or_refused_in_one_line(originals, tmp_path):
    @settings(FUZZ, max_examples=12)  # 19 MB of JSON per case
    @given(damage())
    def check(how):
        target = tmp_path / "torch_trace.json"
        target.write_bytes(damaged(originals["torch_trace.json"], how))
        assert_answered(*analyze(target), how)
    check()


def test_a_stats_directory_with_a_damaged_csv_is_analysed_or_refused_in_one_line(shared_fixtures, tmp_path):
    source = shared_fixtures / "h200_small_fp32"
    csvs = sorted(path.name for path in source.glob("*.csv"))

    @FUZZ
    @given(st.sampled_from(csvs), damage())
    def check(name, how):
        stats = tmp_path / "stats"
        shutil.rmtree(stats, ignore_errors=True)
        stats.mkdir()
        for csv in csvs:
            shutil.copy(source / csv, stats / csv)
        (stats / name).write_bytes(damaged((source / name).read_bytes(), how))
        assert_answered(*analyze(stats), (name, how))
    check()


RUN_FILES = ["summary.json", "manifest.json", "steps.jsonl", "kernels/analysis.json", "memory/analysis.json",
             "kernels/phase_kernels.csv"]


def test_a_run_directory_with_a_damaged_file_is_read_or_refused_in_one_line(tmp_path):
    from sysprof.tui.model.run_files import state_from_run_dir

    @settings(FUZZ, max_examples=60)
    @given(st.sampled_from(RUN_FILES), damage())
    def check(name, how):
        run_dir = tmp_path / "run"
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.copytree(RUN, run_dir)
        (run_dir / name).write_bytes(damaged((RUN / name).read_bytes(), how))
        assert_answered(*analyze(run_dir), (name, how))
        try:
            state_from_run_dir(run_dir)  # what the app opens
        except SysprofError as exc:
            assert "\n" not in str(exc)
        steps = rundir.read_steps(run_dir)
        assert all(isinstance(step, dict) for step in steps)
    check()

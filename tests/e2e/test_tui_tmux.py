"""End to end: the real `sysprof-tui` in tmux, driven with send-keys, read back with capture-pane.

Needs tmux (CI: `apt-get install -y tmux`); skipped without it.
"""
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from benchmarks.tmux_server import TmuxServer

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "runs" / "small-h200-analyses"
pytestmark = [pytest.mark.slow,  # real processes and the whole app: `pytest -m "not slow"` leaves them out
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


tmux = TmuxServer("sysprof-e2e")  # every session of this module on one private server, started by the fixture


@pytest.fixture(scope="module", autouse=True)
def tmux_server():
    with tmux:
        yield


def screen(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def wait_for(session: str, text: str, timeout: float = 20.0, absent: str | None = None, flat: bool = False) -> str:
    """The screen once it shows text (flat: also where the app wrapped it over lines)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = screen(session)
        found = text in (" ".join(shown.split()) if flat else shown)
        if found and (absent is None or absent not in shown):
            return shown
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared; screen:\n{screen(session)}")


def press_until(session: str, key: str, text: str, timeout: float = 20.0) -> str:
    """Send an idempotent key until text shows (keys sent while the app is still starting are lost)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tmux("send-keys", "-t", session, key)
        try:
            return wait_for(session, text, timeout=1.0)
        except AssertionError:
            continue
    raise AssertionError(f"{text!r} never appeared after {key!r}; screen:\n{screen(session)}")


def type_into_field(session: str, focus_key: str, text: str, expect: str, absent: str | None = None,
                    timeout: float = 60.0) -> str:
    """Focus a text field, replace its text, retrying when a loaded machine drops keys sent during a refresh."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if focus_key:
            tmux("send-keys", "-t", session, focus_key)
        time.sleep(0.5)
        tmux("send-keys", "-t", session, "C-u")
        tmux("send-keys", "-t", session, "-l", text)
        try:
            return wait_for(session, expect, timeout=5.0, absent=absent)
        except AssertionError:
            continue
    return wait_for(session, expect, timeout=1.0, absent=absent)


@pytest.fixture
def session(tmp_path):
    name = f"sysprof-e2e-{tmp_path.name}"
    command = f"cd {ROOT} && {sys.executable} -m tui {RUN} --runs-dir {tmp_path / 'runs'}; sleep 30"
    tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-e", "NO_COLOR=", command)
    yield name
    tmux.kill_session(name)


def test_open_run_filter_kernels_export_markdown(session, tmp_path):
    wait_for(session, "ok · 3 measured steps")
    press_until(session, "3", "backend nsys")
    shown = type_into_field(session, "/", "cutlass", "· 3 of 64")  # 3 cutlass kernels in the real table
    tmux("send-keys", "-t", session, "Enter")
    assert "cutlass_80_simt_sgemm" in shown and "sm80_xmma" not in shown  # short names: the GEMM CUTLASS runs
    time.sleep(1.0)  # focus leaves the filter after a refresh; an "e" sent sooner would be typed into it
    tmux("send-keys", "-t", session, "e")
    wait_for(session, "Export kernels")
    # A path short enough to show whole in the field: a key of an earlier try that lands late shows on screen
    # (the field scrolls a long path, and its tail alone matched while the whole was wrong under load)
    target = Path(tempfile.mkdtemp(prefix="e2e-", dir="/tmp")) / "k.md"
    try:
        type_into_field(session, "", str(target), f"{target} ")
        tmux("send-keys", "-t", session, "Enter")
        shown = wait_for(session, "wrote")
        lines = target.read_text().splitlines() if target.is_file() else shown.splitlines()
    finally:
        shutil.rmtree(target.parent)
    assert lines[0].startswith("| phase | name | class | instances | total_ns |")
    assert len(lines) > 2 and all("cutlass" in line for line in lines[2:])
    tmux("send-keys", "-t", session, "q")
    time.sleep(1.0)
    assert "backend nsys" not in screen(session)  # the app quit and restored the terminal


def process_left(needle: str) -> list[str]:
    """Processes (not zombies) whose command line names needle: what a dropped session must not leave."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in command and state != "Z":
            found.append(f"{proc.name}: {command}")
    return found


def start_in_app_then_drop(tmp_path, config: dict, dropped_when) -> tuple[Path, Path, list[str]]:
    """Start config's run from the app in tmux, kill the tmux session (a dropped SSH connection) once
    dropped_when(run_dir) holds: the run directory, the runs root and the tmux environment."""
    from sysprof.profiler_core.documents.liveness import live_process

    runs, config_home = tmp_path / "runs", tmp_path / "config"
    (config_home / "sysprof-tui").mkdir(parents=True)
    (config_home / "sysprof-tui" / "last_config.json").write_text(json.dumps(config))
    env = ["-e", "NO_COLOR=", "-e", f"XDG_CONFIG_HOME={config_home}"]
    first = f"sysprof-e2e-drop-{tmp_path.name}"
    tmux("new-session", "-d", "-s", first, "-x", "100", "-y", "30", *env,
         f"cd {ROOT} && {sys.executable} -m tui --runs-dir {runs}")
    try:
        wait_for(first, config["model"])
        press_until(first, "C-r", "measured steps", timeout=60)
        deadline = time.monotonic() + 240
        while not runs.is_dir() or not any(runs.iterdir()):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        run_dir = next(runs.iterdir())
        while not dropped_when(run_dir):
            assert time.monotonic() < deadline, "the run never reached the moment to drop the terminal"
            time.sleep(0.1)
    finally:
        tmux.kill_session(first)  # the SSH session drops
    time.sleep(2.0)
    live = live_process(run_dir)
    assert live is not None and live.alive, "the run died with its terminal"
    return run_dir, runs, env


def reattach_until_finished(tmp_path, run_dir: Path, runs: Path, env: list[str], steps: int) -> None:
    """A new app on run_dir follows it to its end."""
    second = f"sysprof-e2e-back-{tmp_path.name}"
    tmux("new-session", "-d", "-s", second, "-x", "100", "-y", "30", *env,
         f"cd {ROOT} && {sys.executable} -m tui {run_dir} --runs-dir {runs}; sleep 30")
    try:
        from sysprof.profiler_core.base import rundir

        deadline = time.monotonic() + 900  # the steps' own time: minutes on a loaded machine, not the app's to wait
        while rundir.read_summary(run_dir) is None and time.monotonic() < deadline:
            time.sleep(1.0)
        wait_for(second, f"ok · {steps} measured steps", timeout=60)  # the app followed the run to its end
        tmux("send-keys", "-t", second, "q")
    finally:
        tmux.kill_session(second)


def measured_steps(directory: Path) -> int:
    from sysprof.profiler_core.base import rundir

    return sum(step["kind"] == "measured" for step in rundir.read_steps(directory))


def test_a_dropped_terminal_leaves_the_run_going_and_a_new_app_reattaches_to_its_end(tmp_path):
    from sysprof.profiler_core.base import rundir

    steps = 600
    config = {"model": "tiny", "ctx": 32, "batch": 2, "warmup": 1, "steps": steps, "device": "cpu"}
    run_dir, runs, env = start_in_app_then_drop(tmp_path, config, lambda run_dir: measured_steps(run_dir) >= 20)
    assert rundir.read_summary(run_dir) is None
    reattach_until_finished(tmp_path, run_dir, runs, env, steps)
    summary = rundir.read_summary(run_dir)
    assert summary["status"] == "ok" and summary["phases"]["step"]["n"] == steps
    assert measured_steps(run_dir) == steps
    assert not (run_dir / rundir.LIVE).exists()
    time.sleep(1.0)
    assert process_left(str(run_dir)) == []


@pytest.mark.gpu
def test_a_terminal_dropped_during_the_nsys_capture_still_gives_kernel_tables(tmp_path):
    """The same on a GPU with Nsight Systems: the connection drops while nsys captures the profiled pass; the
    report is still written, exported and analysed, and nothing (runner, nsys) is left behind."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from sysprof.profiler_core.base import rundir
    from sysprof.profiler_core.kernels.nsys.locate import find_nsys

    if find_nsys() is None:
        pytest.skip("needs nsys")
    steps = 40
    config = {"model": "small", "ctx": 256, "batch": 4, "warmup": 3, "steps": steps, "device": "cuda",
              "profiler": "nsys"}
    run_dir, runs, env = start_in_app_then_drop(
        tmp_path, config, lambda run_dir: measured_steps(run_dir / rundir.PROFILED_DIR) >= 5)
    reattach_until_finished(tmp_path, run_dir, runs, env, steps)
    deadline = time.monotonic() + 120
    while rundir.read_summary(run_dir) is None or (run_dir / rundir.LIVE).exists():
        assert time.monotonic() < deadline, "the session never wrote its summary"
        time.sleep(0.5)
    summary = rundir.read_summary(run_dir)
    assert summary["status"] == "ok", summary.get("error")
    profile = summary["profile"]
    assert not profile.get("error") and measured_steps(run_dir / rundir.PROFILED_DIR) == steps
    analysis = rundir.read_json(run_dir / profile["kernels"])
    assert analysis["phases"]["backward"]["kernels"] > 0
    assert (run_dir / rundir.PROFILED_DIR / "profile.nsys-rep").is_file()
    time.sleep(1.0)
    assert process_left(str(run_dir)) == []


def test_a_study_at_80_by_24_draws_its_figure_and_writes_its_report(tmp_path):
    """The real app in an 80 × 24 terminal on the saved H200 attention study: f swaps the table for the figure
    (forward ms against T), f again back, w writes the report under the runs directory."""
    name = f"sysprof-e2e-figure-{tmp_path.name}"
    study = ROOT / "tests" / "data" / "studies" / "attention-oom-h200"
    command = f"cd {ROOT} && {sys.executable} -m tui {study} --runs-dir {tmp_path / 'runs'}; sleep 30"
    tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", "-e", "NO_COLOR=", command)
    try:
        wait_for(name, "f: figure", timeout=60)  # the app shows the study: keys reach it from here on
        tmux("send-keys", "-t", name, "f")  # a toggle, so sent once (press_until could toggle it back)
        shown = wait_for(name, "back to the table", timeout=30)
        assert "forward ms" in shown and "sequence length" in shown and "65536" in shown
        assert all(len(line) <= 80 for line in shown.splitlines())
        tmux("send-keys", "-t", name, "f")
        wait_for(name, "f: figure", timeout=30)
        tmux("send-keys", "-t", name, "w")
        wait_for(name, "wrote", timeout=120)
        (report,) = (tmp_path / "runs" / "reports").glob("*-report.md")
        assert "## attention study attention-oom-h200" in report.read_text()
    finally:
        tmux.kill_session(name)


def test_advise_from_configure_runs_to_its_answer_on_the_studies_screen(tmp_path):
    """The real app asks the real advisor about the form's config (tiny on the CPU, a 1-minute budget): Studies
    shows the candidates as they land, then the answer above the tables; u takes an answer into Configure."""
    name = f"sysprof-e2e-advise-{tmp_path.name}"
    settings = tmp_path / "config" / "sysprof-tui"
    settings.mkdir(parents=True)
    (settings / "last_config.json").write_text(json.dumps(
        {"model": "tiny", "device": "cpu", "ctx": 32, "warmup": 1, "steps": 4}))
    command = f"cd {ROOT} && {sys.executable} -m tui --runs-dir {tmp_path / 'runs'}; sleep 30"
    tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-e", "NO_COLOR=",
         "-e", f"XDG_CONFIG_HOME={tmp_path / 'config'}", command)
    try:
        wait_for(name, "tiny (3.1M)", timeout=60)  # the form of the saved config
        tmux("send-keys", "-t", name, "BTab", "BTab")  # from the form's first field back to the budget field
        time.sleep(0.5)
        tmux("send-keys", "-t", name, "-l", "1")
        wait_for(name, "Advise (ctrl+y)", absent="budget in minutes (20)")  # 1 minute typed, not the default
        tmux("send-keys", "-t", name, "C-y")
        wait_for(name, "advise · running", timeout=60)
        shown = wait_for(name, "each candidate against the baseline", timeout=180)  # the plan, once the diagnosis ran
        assert any("batch 16" in line for line in shown.splitlines()), shown  # the plan's rows, as they land
        (study,) = (tmp_path / "runs").glob("*-advise")  # the rows not run are below the fold: the plan says them
        skipped = {row["name"]: row["reason"] for row in json.loads((study / "advice.json").read_text())["skipped"]}
        assert skipped["TF32 for fp32 matmuls"] == "TF32 is a CUDA matmul mode"  # the CPU's
        shown = wait_for(name, "advise · finished", timeout=600)
        assert "answer: " in shown
        (study,) = (tmp_path / "runs").glob("*-advise")
        answer, measured = study_answer(study)
        assert measured, "the budget measured no candidate"
        if answer.get("command"):  # a gain that held twice: u puts it into the form
            # the final tables load a moment after the stage reads finished, and the hint may wrap
            wait_for(name, "u: use it in Configure", timeout=30, flat=True)
            tmux("send-keys", "-t", name, "u")
            wait_for(name, "Run (ctrl+r)", timeout=30)
        else:  # on a loaded machine no gain may hold: the answer says why, and there is nothing to use
            assert answer["answer"].split(":")[0] in ("none", "none confirmed", "no candidate beat the baseline "
                                                      "beyond noise with the same loss")
    finally:
        tmux.kill_session(name)


def study_answer(study: Path) -> tuple[dict, list[dict]]:
    """The advise study's answer and its candidates that ran."""
    from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
    from sysprof.profiler_core.studies.kinds.advise.tables import CANDIDATES_TABLE
    from sysprof.profiler_core.studies.results import study_tables

    tables = study_tables(study)
    return tables[RECOMMENDED_TABLE][0], [row for row in tables[CANDIDATES_TABLE] if row["status"] == "ok"]

"""One vocabulary for a run's state (events.run_state): every state, from new summaries and from summaries written
before "state" existed, and the words that follow it (events.end_reason). Pure: no process, no torch."""
import json
from pathlib import Path

import pytest

from sysprof.profiler_core.analysis.metrics import build_summary
from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.session.rank_checks import with_rank_failure
from sysprof.profiler_core.session.repeats import group_summary

SAVED_RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def failed(kind: str, status: str = events.FAILED_STATUS, phase: str | None = None) -> dict:
    return {"status": status, "error": {"kind": kind, "message": f"a {kind}", "phase": phase,
                                        "peak_allocated_bytes": None}}


@pytest.mark.parametrize("summary, state", [
    ({"status": "ok"}, "ok"),
    (failed("oom", status="oom", phase="backward"), "oom"),
    (failed("oom"), "oom"),  # a rank's OOM named by the first rank's summary
    (failed("cancelled"), "cancelled"),  # a user's stop is not a failure
    (failed("killed"), "killed"),
    (failed("died"), "died"),
    (failed("cuda"), "failed"),
    (failed("config"), "failed"),
    (failed("disk"), "failed"),
    (failed("error"), "failed"),
    ({"status": "failed"}, "failed"),  # no error recorded
    (None, "died"),  # no summary and nothing running: nobody wrote its end
])
def test_every_state_from_status_and_error_kind(summary, state):
    assert events.run_state(summary) == state
    assert state in events.RUN_STATES


def test_a_live_process_is_running_whatever_its_directory_holds_yet():
    assert events.run_state(None, running=True) == "running"
    assert events.run_state({"status": "ok"}, running=True) == "running"  # a group's first process wrote one
    assert set(events.RUN_STATES) == {"running", "ok", "failed", "cancelled", "killed", "oom", "died"}


def test_summaries_written_before_state_existed_read_the_same():
    saved = json.loads((SAVED_RUNS / "tiny-ctx32" / "summary.json").read_text())
    assert "state" not in saved and events.run_state(saved) == "ok"
    old_cancel = {**saved, **failed("cancelled")}  # the old spelling of a cancel: failed, error kind cancelled
    assert "state" not in old_cancel and events.run_state(old_cancel) == "cancelled"


def test_build_summary_writes_the_state_beside_an_unchanged_status():
    cfg = RunConfig(model="tiny", ctx=16, batch=1, device="cpu")
    error = failed("cancelled")["error"]
    cancelled = build_summary(cfg, {}, [], events.FAILED_STATUS, "run", error=error)
    assert (cancelled["status"], cancelled["state"]) == ("failed", "cancelled")
    assert build_summary(cfg, {}, [], events.OK, "run")["state"] == "ok"


def test_a_group_cancelled_between_processes_and_a_rank_failure_restate_it(tmp_path):
    cfg = RunConfig(model="tiny", ctx=16, batch=1, device="cpu")
    first = build_summary(cfg, {}, [], events.OK, "run")
    group = group_summary([first], requested=3, cancelled=True)
    assert (group["status"], group["state"], first["state"]) == ("failed", "cancelled", "ok")
    rank_dir = tmp_path / "ranks" / "01"
    rank_dir.mkdir(parents=True)
    (rank_dir / "summary.json").write_text(json.dumps(failed("oom", status="oom", phase="forward")))
    cancelled_rank0 = build_summary(cfg, {}, [], events.FAILED_STATUS, "run", error=failed("cancelled")["error"])
    named = with_rank_failure(dict(cancelled_rank0), tmp_path, nproc=2)
    assert (named["status"], named["state"]) == ("oom", "oom")


@pytest.mark.parametrize("state, error, words", [
    ("cancelled", failed("cancelled")["error"] | {"message": "stopped by SIGINT"}, "stopped by SIGINT"),
    ("oom", failed("oom", phase="backward")["error"], "a oom (in backward)"),
    ("failed", failed("cuda", phase="forward")["error"], "cuda in forward: a cuda"),
    ("failed", failed("error")["error"], "error in run: a error"),
    ("ok", None, ""),
])
def test_end_reason_names_the_kind_only_where_the_state_does_not(state, error, words):
    assert events.end_reason(state, error) == words

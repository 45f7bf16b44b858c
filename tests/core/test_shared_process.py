"""Shared processes: several configurations measured as arms of one runner process in interleaved blocks (real
runners on CPU), a failing arm ending alone at its smoke test, and a sweep whose rounds are shared processes."""
import dataclasses
import json
from pathlib import Path

import pytest

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.runner.arms import block_ranges
from sysprof.profiler_core.session.arms import SHARED_RECORD, run_shared, shareable
from sysprof.profiler_core.session.repeats import process_dir
from sysprof.profiler_core.studies import shared_rounds, sweep

TINY = RunConfig(model="tiny", ctx=16, batch=2, warmup=1, steps=6, device="cpu")


def test_blocks_split_the_measured_steps_evenly_and_never_below_three_steps():
    assert block_ranges(20, 4) == [range(0, 5), range(5, 10), range(10, 15), range(15, 20)]
    assert block_ranges(8, 4) == [range(0, 4), range(4, 8)]  # 4 blocks of 8 would rest on 2 steps each
    assert block_ranges(5, 4) == [range(0, 5)]
    assert sorted(len(r) for r in block_ranges(14, 4)) == [3, 3, 4, 4]


def test_what_cannot_share_a_process_says_why():
    assert shareable([TINY, dataclasses.replace(TINY, batch=4)]) is None
    assert "profiled" in shareable([TINY, dataclasses.replace(TINY, profiler="torch")])
    assert "torchrun" in shareable([TINY, dataclasses.replace(TINY, nproc=2)])
    assert "devices" in shareable([TINY, dataclasses.replace(TINY, device="auto")])


@pytest.mark.slow
def test_arms_of_one_process_train_their_own_models_and_a_broken_one_ends_alone(tmp_path):
    """Two identical arms (an A/A pair) see the same losses step for step: each has its own model, optimizer and
    data from the same seed, so the blocks of the other arms between their steps change nothing they compute. An
    arm whose optimizer cannot be built ends at its smoke test with the reason; the others are measured."""
    broken = dataclasses.replace(TINY, optimizer_args=("nosuch=1",))
    arms = [(TINY, tmp_path / "a"), (broken, tmp_path / "broken"), (TINY, tmp_path / "a_again"),
            (dataclasses.replace(TINY, batch=4), tmp_path / "batch4")]
    ended = []
    summaries = run_shared(arms, tmp_path / "shared", lambda arm, status: ended.append((arm, status)))
    assert [s["status"] for s in summaries] == ["ok", "failed", "ok", "ok"]
    assert "nosuch" in summaries[1]["error"]["message"] and not rundir.read_steps(tmp_path / "broken")
    assert sorted(ended) == [(0, "ok"), (1, "failed"), (2, "ok"), (3, "ok")]
    first, again = rundir.read_steps(tmp_path / "a"), rundir.read_steps(tmp_path / "a_again")
    assert [s["loss"] for s in first] == [s["loss"] for s in again]
    measured = [s for s in first if s["kind"] == "measured"]
    assert [s["block"] for s in measured] == [0, 0, 0, 1, 1, 1] and [s["index"] for s in measured] == list(range(6))
    shared = summaries[0]["shared_process"]
    assert shared["arms"] == 4 and shared["blocks"] == 2 and shared["own_s"] > 0
    assert summaries[3]["tokens_per_s"] > 0 and summaries[3]["phases"]["step"]["n"] == 6
    record = json.loads((tmp_path / "shared" / SHARED_RECORD).read_text())
    assert record["exit_code"] == 1 and record["end"] > record["start"]  # one arm failed: the process says so


@pytest.mark.slow
def test_an_arm_whose_smoke_test_hangs_fails_at_its_bound_and_the_others_are_measured(tmp_path, monkeypatch):
    """A model whose forward never returns: its warm-up is cut at the arm's bound (here 10 s; in use minutes), with
    a one-line reason, and the arm beside it is measured as if it had been alone. The bound is every arm's: 10 s
    leaves the tiny arm's build and warm-up (under 1 s on a quiet 2-core machine) room on a loaded one."""
    from sysprof.profiler_core.session import arms as session_arms

    monkeypatch.setitem(session_arms.SMOKE_BOUND_S, "eager", 10.0)
    hangs = dataclasses.replace(TINY, model_factory="tests/data/models/hangs/waits_forever.py:WaitsForever")
    summaries = run_shared([(hangs, tmp_path / "hangs"), (TINY, tmp_path / "a")], tmp_path / "shared")
    assert [s["status"] for s in summaries] == ["failed", "ok"]
    assert summaries[0]["error"]["message"] == ("its smoke test (build, compile, warm-up) ran past 10 s: stopped "
                                               "there")
    assert summaries[1]["phases"]["step"]["n"] == 6


@pytest.mark.slow
def test_a_shared_sweep_runs_one_process_a_round_the_order_reversed_every_other(tmp_path):
    configs = [dataclasses.replace(TINY, repeats=2, steps=4), dataclasses.replace(TINY, repeats=2, steps=4, batch=4)]
    sweep_dir = sweep.create(tmp_path, "shared", configs, ["batch"])
    seen = []
    results = sweep.run(sweep_dir, seen.append, shared=True)
    assert [r["status"] for r in results] == ["ok", "ok"]
    assert all(r["repeats"]["ok"] == 2 for r in results)
    rounds = sorted((sweep_dir / shared_rounds.SHARED_DIR).iterdir())
    orders = [json.loads((folder / SHARED_RECORD).read_text())["arms"] for folder in rounds]
    cells = [sweep.cell_dir(sweep_dir, i, cfg) for i, cfg in enumerate(configs)]
    found = [[(folder / arm).resolve() for arm in order] for folder, order in zip(rounds, orders)]
    assert found == [[process_dir(cells[0], 0).resolve(), process_dir(cells[1], 0).resolve()],
                     [process_dir(cells[1], 1).resolve(), process_dir(cells[0], 1).resolve()]]
    assert [e["event"] for e in seen].count("cell_done") == 4
    assert results[1]["repeats"]["processes"][1]["shared_process"]["arms"] == 2


def test_arms_that_compile_are_measured_after_every_eager_arm(tmp_path):
    """A compile in a process slows the eager steps of models of the same code there (62 → 77 ms on an H200), so
    the eager arms run first, whatever the order asked, and the compiling ones after them."""
    from sysprof.profiler_core.runner.arms import phases_of_process
    from sysprof.profiler_core.runner.engine import Runner
    from sysprof.profiler_core.runner.shared_process import Arm

    configs = [dataclasses.replace(TINY, compile=True), TINY, dataclasses.replace(TINY, optimizer_impl="compiled"),
               dataclasses.replace(TINY, batch=4)]
    arms = [Arm(Runner(cfg, tmp_path / str(k)), k, None) for k, cfg in enumerate(configs)]
    assert [[arm.position for arm in phase] for phase in phases_of_process(arms)] == [[1, 3], [0, 2]]
    assert [[arm.position for arm in phase] for phase in phases_of_process(arms[1:2])] == [[1]]


@pytest.mark.slow
def test_a_stop_after_an_arm_failed_still_ends_every_arm_with_its_summary(tmp_path):
    """A failed arm's summary is written with stops held off; the process must listen again after it, or a Ctrl-C
    would wait out the launcher's grace and be killed, every arm left without a summary. Every arm is long: the
    blocks are planned on the fewest steps of any arm, and a process that has ended cannot be stopped."""
    import signal
    import subprocess
    import time

    from sysprof.profiler_core.session.arms import arms_argv

    long = dataclasses.replace(TINY, steps=100_000)
    arms = [(dataclasses.replace(long, optimizer_args=("nosuch=1",)), tmp_path / "broken"), (long, tmp_path / "a"),
            (long, tmp_path / "b")]
    stderr = (tmp_path / "stderr.log").open("w")
    process = subprocess.Popen(arms_argv(arms), stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.monotonic() + 120
    while len(rundir.read_steps(tmp_path / "a")) < 5 and time.monotonic() < deadline:  # a's first block: b waits
        time.sleep(0.2)
    assert (tmp_path / "broken" / "summary.json").is_file()
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 1, (tmp_path / "stderr.log").read_text()[-3000:]
    stderr.close()
    summaries = {name: rundir.read_summary(tmp_path / name) for name in ("a", "b")}
    assert all(s["error"]["kind"] == "cancelled" and s["shared_process"]["arms"] == 3 for s in summaries.values())
    # the steps it finished are kept: every measured one on disk (at least the 4 after its warm-up step awaited
    # above; how many more ran before the stop landed depends on the machine's load)
    measured = [s for s in rundir.read_steps(tmp_path / "a") if s["kind"] == "measured"]
    assert summaries["a"]["phases"]["step"]["n"] == len(measured) >= 4


def test_an_arm_out_of_memory_beside_others_is_measured_again_alone(tmp_path, monkeypatch):
    """The other arms' weights may have taken what it lacked: its cell's process runs again in a fresh process, and
    that one's end is the cell's. An OOM alone in its process stays a result."""
    from sysprof.profiler_core.session.repeats import RepeatedRun

    ran_alone = []

    def run_process(self, index):
        ran_alone.append((self.run_dir.name, index, sorted(p.name for p in process_dir(self.run_dir, index).iterdir())))
        summary = {"status": "ok", "error": None}
        self.summaries.append(summary)
        return summary

    monkeypatch.setattr(RepeatedRun, "run_process", run_process)
    groups = {i: RepeatedRun(TINY, tmp_path / f"cell{i}", lambda event: None) for i in range(2)}
    for group in groups.values():
        group.run_dir.mkdir()
        (group.run_dir / "steps.jsonl").write_text("{}\n")  # what the arm left: not to be mixed into the rerun
    crowded = {"status": "oom", "error": {"kind": "oom", "message": "CUDA out of memory"},
               "shared_process": {"arms": 2}}
    alone = {**crowded, "shared_process": {"arms": 1}}
    shared_rounds.take_round(groups, [0, 1], [crowded, alone], lambda event: None, 2)
    assert ran_alone == [("cell0", 0, [])]
    assert groups[0].summaries[0]["status"] == "ok" and groups[1].summaries == [alone]


@pytest.mark.slow
def test_with_two_gpus_two_rounds_run_at_once_one_on_each_and_every_process_keeps_its_place(tmp_path):
    """Rounds 1 and 2 are one wave: two processes at once, each told its GPU, each measuring every cell (so each
    GPU carries the baseline's blocks), the second in the reversed order; round 3 comes after them alone. Every
    cell ends with its three processes in their own places, as one GPU would have left them."""
    configs = [dataclasses.replace(TINY, repeats=3, steps=3), dataclasses.replace(TINY, repeats=3, steps=3, batch=4)]
    sweep_dir = sweep.create(tmp_path, "lanes", configs, ["batch"])
    results = sweep.run(sweep_dir, lambda event: None, gpus=["0", "1"], shared=True)
    assert [r["repeats"]["ok"] for r in results] == [3, 3]
    rounds = sorted((sweep_dir / shared_rounds.SHARED_DIR).iterdir())
    records = [json.loads((folder / SHARED_RECORD).read_text()) for folder in rounds]
    assert [record["env"]["CUDA_VISIBLE_DEVICES"] for record in records] == ["0", "1", "0"]
    cells = [sweep.cell_dir(sweep_dir, i, cfg) for i, cfg in enumerate(configs)]
    found = [[(folder / arm).resolve() for arm in record["arms"]] for folder, record in zip(rounds, records)]
    assert found == [[process_dir(cells[0], 0).resolve(), process_dir(cells[1], 0).resolve()],
                     [process_dir(cells[1], 1).resolve(), process_dir(cells[0], 1).resolve()],
                     [process_dir(cells[0], 2).resolve(), process_dir(cells[1], 2).resolve()]]
    assert all(rundir.read_summary(process_dir(cells[1], k))["env"]["cuda_visible_devices"] == gpu
               for k, gpu in enumerate("010"))


def test_a_wave_plans_one_round_per_gpu_while_the_cells_have_processes_left():
    from sysprof.profiler_core.session.repeats import RepeatedRun

    configs = [dataclasses.replace(TINY, repeats=3), dataclasses.replace(TINY, repeats=2)]
    groups = {i: RepeatedRun(cfg, Path("unused"), lambda event: None)
              for i, cfg in enumerate(configs)}
    assert shared_rounds._wave(configs, groups, 0, 4) == [[0, 1], [1, 0], [0]]
    groups[1].summaries.append({"status": "failed"})  # a failed process ends its cell: no more rounds of it
    assert shared_rounds._wave(configs, groups, 1, 2) == [[0], [0]]


def test_a_cell_a_round_before_ended_drops_its_process_of_a_later_round_of_the_wave(tmp_path):
    from sysprof.profiler_core.session.repeats import RepeatedRun

    group = RepeatedRun(dataclasses.replace(TINY, repeats=3), tmp_path / "cell", lambda event: None)
    later = tmp_path / "cell" / "repeats" / "02"
    later.mkdir(parents=True)
    failed = {"status": "failed", "error": {"kind": "failed", "message": "boom"}}
    shared_rounds.take_round({0: group}, [0], [failed], lambda event: None, 3, [tmp_path / "cell"])
    shared_rounds.take_round({0: group}, [0], [{"status": "ok", "error": None}], lambda event: None, 3, [later])
    assert group.summaries == [failed] and not later.exists()


@pytest.mark.slow
def test_a_block_with_a_least_duration_runs_past_its_steps_and_the_next_block_goes_on_from_there(tmp_path):
    """The energy goal's blocks: each arm's block lasts min_block_s however fast its steps are (NVML's counter needs
    a second or more), its step indices going on from the block before, never repeated."""
    arms = [(TINY, tmp_path / "a"), (dataclasses.replace(TINY, batch=4), tmp_path / "b")]
    summaries = run_shared(arms, tmp_path / "shared", min_block_s=0.4)
    assert [s["status"] for s in summaries] == ["ok", "ok"]
    for name in ("a", "b"):
        measured = [s for s in rundir.read_steps(tmp_path / name) if s["kind"] == "measured"]
        assert [s["index"] for s in measured] == list(range(len(measured)))
        blocks = sorted({s["block"] for s in measured})
        assert blocks == [0, 1]
        for block in blocks:
            walls = [s["wall_ms"] for s in measured if s["block"] == block]
            assert len(walls) >= 3 and sum(walls) >= 0.4 * 1e3 * 0.95  # its steps: the stretch less the gaps


def test_each_arm_of_a_round_ends_under_its_own_name(capsys):
    """A shared round starts every cell before any ends: on an H200 the advisor printed the FP8 arm's failure under
    the change at once's name (the last cell started), and every cell's end under FP8's."""
    from sysprof.profiler_core.base import events
    from sysprof.profiler_core.studies.progress import Progress, config_label

    progress = Progress(True)
    listener = progress.sweep_listener("advise", Path("study"))
    configs = {1: TINY, 2: dataclasses.replace(TINY, batch=4), 3: dataclasses.replace(TINY, dtype="bf16")}
    for index, cfg in configs.items():
        listener({"event": events.CELL, "index": index, "config": cfg.to_dict(), "repeat": 1})
    for index, status in ((1, events.OK), (3, events.FAILED_STATUS), (2, events.OK)):
        listener({"event": events.CELL_DONE, "index": index, "status": status, "reason": "", "pending": 3})
    ended = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"cell_done"' in line]
    labels = {index: config_label(cfg.to_dict()) for index, cfg in configs.items()}
    assert len(set(labels.values())) == 3 and "dtype=bf16" in labels[3]
    assert [(e["index"], e["label"]) for e in ended] == [(1, labels[1]), (3, labels[3]), (2, labels[2])]

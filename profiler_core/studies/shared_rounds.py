"""A sweep's cells as arms of shared processes (runner/arms.py), round after round; with several GPUs, as many
rounds at once as there are GPUs, one process on each.

Every process measures the next process of every cell not complete, so each GPU carries the baseline's blocks
beside every candidate's: a GPU slower than another slows both sides of a comparison alike, and the difference
between GPUs enters the verdict as the spread between processes, where it belongs on a node of several GPUs.
"""
from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.records import RunSummary
from sysprof.profiler_core.session.arms import run_shared
from sysprof.profiler_core.session.repeats import RepeatedRun, clean_only, process_dir

SHARED_DIR = "shared"  # a sweep's shared processes, one folder each (session/arms.py)

CellDir = Callable[[int], Path]  # a cell's index → its run directory


def shared_rounds(sweep_dir: Path, configs: Sequence[RunConfig], groups: Mapping[int, RepeatedRun],
                  on_event: Callable[[dict], None], cell_dir: CellDir, gpus: Sequence[str] = (),
                  min_block_s: float = 0.0) -> None:
    """Round after round (a wave of one round per GPU), one process measures the next process of every cell not
    complete, each cell an arm, in the plan's order and reversed every other round: a candidate costs its steps,
    not a process's start-up. A cell whose arm did not end ok is complete (as a group of fresh processes is).
    min_block_s: the shortest an arm's block may last (an energy figure needs a second or more)."""
    lanes: list[str | None] = list(gpus) or [None]
    total = sum(configs[i].repeats - len(groups[i].summaries) for i in groups)
    done, round_index, started = 0, 0, time.perf_counter()
    while rounds := _wave(configs, groups, round_index, len(lanes)):
        for offset, cells in enumerate(rounds):
            for position, index in enumerate(cells):  # the arms of one process: each its own cell of the pending
                on_event({"event": events.CELL, "index": index, "config": configs[index].to_dict(),
                          "done": done + position, "pending": total, "repeat": len(groups[index].summaries) + offset
                          + 1, "eta_s": _eta(started, done, total)})
        arms = [[(clean_only(configs[i]), process_dir(cell_dir(i), len(groups[i].summaries) + offset))
                 for i in cells] for offset, cells in enumerate(rounds)]
        results = _run_wave(arms, next_shared_dirs(sweep_dir, len(rounds)), lanes, min_block_s)
        stop = False
        for cells, round_arms, summaries in zip(rounds, arms, results):
            stop = take_round(groups, cells, summaries, on_event, total, [path for _, path in round_arms]) or stop
            done += len(cells)
        round_index += len(rounds)
        if stop:
            break


def _wave(configs: Sequence[RunConfig], groups: Mapping[int, RepeatedRun], round_index: int,
          lanes: int) -> list[list[int]]:
    """The cells of each round of the next wave (up to one round per GPU): round k takes each live cell's process
    k beyond those it finished, while the cell has that many left."""
    live = [i for i in groups if not groups[i].complete]
    rounds = []
    for offset in range(lanes):
        cells = [i for i in live if len(groups[i].summaries) + offset < configs[i].repeats]
        if cells:
            rounds.append(cells if (round_index + offset) % 2 == 0 else cells[::-1])
    return rounds


Arms = list[tuple[RunConfig, Path]]


def _run_wave(arms: list[Arms], folders: list[Path], lanes: list[str | None],
              min_block_s: float) -> list[list[RunSummary]]:
    """Each round's process at once, one per GPU (in this thread where there is one round); their summaries."""
    if len(arms) == 1:
        return [run_shared(arms[0], folders[0], env=_gpu_env(lanes[0]), min_block_s=min_block_s)]
    results: list[list[RunSummary]] = [[] for _ in arms]

    def lane(k: int) -> None:
        results[k] = run_shared(arms[k], folders[k], env=_gpu_env(lanes[k]), min_block_s=min_block_s)

    workers = [threading.Thread(target=lane, args=(k,), name=f"gpu-{lanes[k]}") for k in range(len(arms))]
    for worker in workers:
        worker.start()
    for worker in workers:  # a Ctrl-C reaches the runners too (our process group): each saves and ends
        worker.join()
    return results


def _gpu_env(gpu: str | None) -> dict[str, str]:
    return {} if gpu is None else {"CUDA_VISIBLE_DEVICES": gpu}


def take_round(groups: Mapping[int, RepeatedRun], cells: list[int], summaries: list[RunSummary],
               on_event: Callable[[dict], None], total: int, paths: Sequence[Path] = ()) -> bool:
    """Each arm's summary into its cell's group; True when the round was stopped (a cancel, a full disk). An arm
    that ran out of memory beside other arms is measured again alone, in a fresh process, before its OOM is a
    result: the others' weights may have taken what it lacked. A cell that a round before this one in the same
    wave ended (it failed there) keeps that end: this round's process of it (at paths) is dropped."""
    stop = False
    for position, (index, summary) in enumerate(zip(cells, summaries)):
        group = groups[index]
        if group.complete:
            if position < len(paths):
                shutil.rmtree(paths[position], ignore_errors=True)
            continue
        if summary["status"] == events.OOM and (summary.get("shared_process") or {}).get("arms", 1) > 1:
            process = len(group.summaries)
            shutil.rmtree(process_dir(group.run_dir, process), ignore_errors=True)
            process_dir(group.run_dir, process).mkdir(parents=True)
            summary = group.run_process(process)  # which keeps it among the group's
        else:
            group.summaries.append(summary)
        status = group.write_summary()["status"] if group.complete else summary["status"]
        on_event({"event": events.CELL_DONE, "index": index, "status": status,
                  "reason": events.cell_reason(summary), "pending": total})
        error = summary.get("error")
        stop = stop or (error is not None and error["kind"] in (events.CANCELLED, events.DISK_FULL))
    return stop


def next_shared_dirs(sweep_dir: Path, count: int) -> list[Path]:
    root = sweep_dir / SHARED_DIR
    taken = len(list(root.iterdir())) if root.is_dir() else 0
    return [root / f"{taken + k + 1:03d}" for k in range(count)]


def _eta(started: float, done: int, total: int) -> float | None:
    if done == 0:
        return None
    return (time.perf_counter() - started) / done * (total - done)

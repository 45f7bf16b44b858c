"""benchmarks/scaling.py on the CPU: gloo ranks stand in for GPUs, so the tables' shape is proven without one."""
import json
from pathlib import Path

from benchmarks import scaling

RESULTS = Path(__file__).parents[2] / "benchmarks" / "results"


def table_rows(text: str) -> dict[tuple[str, str], list[str]]:
    """(parallel, GPUs) → the cells of that scaling-table row."""
    return {tuple(cells[1:3]): cells for cells in (line.split(" | ") for line in text.splitlines())
            if cells[0] == "| tiny"}


def test_the_scaling_table_has_every_cell_its_efficiency_and_the_counts_it_could_not_run(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "launches.jsonl").parent.mkdir()
    (out / "launches.jsonl").write_text('{"cell": "from an earlier run"}\n')  # begun afresh, not appended to
    scaling.main(["--device", "cpu", "--models", "tiny", "--gpus", "1,2,4096", "--fsdp", "tiny@2", "--repeats", "1",
                  "--warmup", "1", "--steps", "4", "--ctx", "64", "--straggler-gpus", "2", "--small-model", "tiny",
                  "--straggler-delay-ms", "300", "--out", str(out)])
    text = capsys.readouterr().out
    launches = [json.loads(line) for line in (out / "launches.jsonl").read_text().splitlines()]
    assert sorted(row["cell"] for row in launches) == ["tiny ddp ×2", "tiny fsdp ×2", "tiny single ×1"]
    assert all(row["status"] == "ok" and row["tokens_per_s"] > 0 and row["step_ms"] > 0 for row in launches)
    tokens = {row["cell"]: [row["tokens_per_s"]] for row in launches}
    rows = table_rows(text)
    assert rows["single", "1"][3] == "1 of 1" and rows["single", "1"][7] == "1.00"  # launches ok, efficiency
    for parallel in ("ddp", "fsdp"):
        expected = scaling.efficiency_of(tokens[f"tiny {parallel} ×2"], tokens["tiny single ×1"], 2)
        assert rows[parallel, "2"][7] == f"{expected:.2f}"
    assert rows["ddp", "4096"][4].startswith("not run: needs 4096 GPUs, this host has")
    assert "tiny ddp ×2, rank 1's forward delayed by 300 ms: ok; the straggler named: yes" in text
    assert "- rank 1 is the straggler" in text
    assert "nsys on every rank\n\nnot run: nsys needs --device cuda" in text
    assert "CPU run: no GPU to check." in text
    assert (out / "scaling.md").read_text() == text.rstrip("\n") + "\n"


def test_a_launch_record_reads_a_real_two_rank_summary():
    """The xl DDP run on the 2×H200 host under nsys: the job's step is its slowest rank's, the peak the highest."""
    summary = json.loads((RESULTS / "issue15_h200x2" / "comm_xl_summary.json").read_text())
    row = scaling.record(scaling.Cell("xl", 2, "ddp"), summary, 61.0, "nsys")
    assert row["step_ms"] == max(rank["median_ms"]["step"] for rank in summary["ranks"]["rows"])
    assert row["tokens_per_s"] == summary["ranks"]["tokens_per_s_all_ranks"]
    assert row["peak_gib"] == round(48907945472 / 2**30, 2)
    assert [rank["rank"] for rank in row["comm"]] == [0, 1] and row["comm"][0]["overlap_pct"] > 30
    table = scaling.communication_table([row])
    assert table[2] == "| xl | ddp | 2 | 0 | 35.1 | 20.2% | 21.4 | 38.9% |"


def test_a_rank_that_died_before_its_steps_leaves_the_others_step_and_a_failed_cell_its_reason():
    summary = json.loads((RESULTS / "issue15_h200x2" / "comm_xl_summary.json").read_text())
    summary["ranks"]["rows"][1] |= {"status": "oom", "median_ms": {}, "peak_allocated_bytes": None}
    row = scaling.record(scaling.Cell("xl", 2, "ddp"), summary, 61.0, "none")
    assert row["step_ms"] == summary["ranks"]["rows"][0]["median_ms"]["step"]
    failed = scaling.record(scaling.Cell("xl", 2, "ddp"), {"status": "failed", "error": {"message": "rank 1: OOM"}},
                            3.0, "none")
    assert (failed["step_ms"], failed["tokens_per_s"]) == (None, None)
    cells = [scaling.Cell("xl", 1, "single"), scaling.Cell("xl", 2, "ddp")]
    table = scaling.scaling_table(cells, [failed], {})
    assert table[3] == "| xl | ddp | 2 | 0 of 1 | — | — | — | — | — |"
    assert scaling.failures([failed]) == ["- xl ddp ×2: failed: rank 1: OOM"]


def test_processes_left_are_the_new_ones_and_nvml_missing_is_said_not_raised(monkeypatch):
    monkeypatch.setattr(scaling, "compute_pids", lambda: {0: {11, 42}, 1: {7}})
    monkeypatch.setattr(scaling.time, "sleep", lambda _: None)
    assert scaling.processes_left({0: {11}, 1: {7}}) == [
        "GPU 0: 1 processes left that were not there before the runs (pids [42])",
        "GPU 1: 0 processes left that were not there before the runs"]
    assert scaling.processes_left("NVML unavailable (ImportError: no pynvml)") == [
        "NVML unavailable (ImportError: no pynvml)"]


def test_a_host_that_can_run_no_cell_lists_them_all_as_not_run(capsys):
    scaling.main(["--device", "cpu", "--models", "tiny", "--gpus", "4096", "--fsdp", "", "--straggler-gpus", "0"])
    text = capsys.readouterr().out
    assert table_rows(text)["ddp", "4096"][4].startswith("not run: needs 4096 GPUs")
    assert "A slowed rank\n\nnot run: 0 ranks asked for, it needs 2 or more" in text


def test_a_launch_past_its_timeout_is_stopped_whole_and_recorded_as_failed(tmp_path):
    args = scaling.parse_args(["--device", "cpu", "--launch-timeout-s", "8", "--steps", "100000"])
    started = scaling.time.monotonic()
    summary, seconds = scaling.launch(args, scaling.run_argv(args, scaling.Cell("tiny", 1, "single"), "none", tmp_path))
    assert summary == {"status": "failed", "error": {"message": "ran past --launch-timeout-s 8 and was stopped"}}
    assert 8 <= seconds < 60 and scaling.time.monotonic() - started < 60
    [run_dir] = tmp_path.iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["state"] == "cancelled"  # stopped, its steps kept

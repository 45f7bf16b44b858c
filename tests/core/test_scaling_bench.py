"""benchmarks/scaling.py on the CPU: gloo ranks stand in for GPUs, so the tables' shape is proven without one."""
import json

from benchmarks import scaling


def test_the_scaling_table_has_every_cell_its_efficiency_and_the_counts_it_could_not_run(tmp_path, capsys):
    out = tmp_path / "out"
    scaling.main(["--device", "cpu", "--models", "tiny", "--gpus", "1,2,4096", "--fsdp", "tiny@2", "--repeats", "1",
                  "--warmup", "1", "--steps", "2", "--ctx", "64", "--straggler-gpus", "2", "--small-model", "tiny",
                  "--nsys-gpus", "0", "--out", str(out)])
    text = capsys.readouterr().out
    rows = {tuple(cells[1:3]): cells for cells in (line.split(" | ") for line in text.splitlines())
            if cells[0] == "| tiny"}
    single, ddp, fsdp = rows["single", "1"], rows["ddp", "2"], rows["fsdp", "2"]
    assert single[3] == "1 of 1" and single[7] == "1.00"  # launches ok, scaling efficiency
    assert 0 < float(ddp[7]) < 2 and 0 < float(fsdp[7]) < 2
    assert rows["ddp", "4096"][4].startswith("not run: needs 4096 GPUs, this host has")
    assert "tiny ddp ×2, rank 1's forward delayed by 30 ms: ok" in text
    assert "nsys on every rank\n\nnot run: 0 ranks asked for, it needs 1 or more" in text
    assert "CPU run: no GPU to check." in text
    assert (out / "scaling.md").read_text() == text.rstrip("\n") + "\n"
    launches = [json.loads(line) for line in (out / "launches.jsonl").read_text().splitlines()]
    assert sorted(row["cell"] for row in launches) == ["tiny ddp ×2", "tiny fsdp ×2", "tiny single ×1"]
    assert all(row["status"] == "ok" and row["tokens_per_s"] > 0 for row in launches)


def test_a_launch_record_reads_a_real_two_rank_summary():
    """The xl DDP run on the 2×H200 host under nsys: the job's step is its slowest rank's, the peak the highest."""
    from pathlib import Path

    summary = json.loads((Path(__file__).parents[2] / "benchmarks" / "results" / "issue15_h200x2"
                          / "comm_xl_summary.json").read_text())
    row = scaling.record(scaling.Cell("xl", 2, "ddp"), summary, 61.0, "nsys")
    assert row["step_ms"] == max(rank["median_ms"]["step"] for rank in summary["ranks"]["rows"])
    assert row["tokens_per_s"] == summary["ranks"]["tokens_per_s_all_ranks"]
    assert row["peak_gib"] == round(48907945472 / 2**30, 2)
    assert [rank["rank"] for rank in row["comm"]] == [0, 1] and row["comm"][0]["overlap_pct"] > 30
    table = scaling.communication_table([row])
    assert table[2] == "| xl | ddp | 2 | 0 | 35.1 | 20.2% | 21.4 | 38.9% |"

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

"""`sysprof-tui A B C`: the first opens on its screen, and every one of them is on the Runs list, studies from
outside the runs root included (before, a second study, or a study after a run, could not be reached)."""
from __future__ import annotations

import shutil
from pathlib import Path

from sysprof.profiler_core.door.run_list import list_run_records

DATA = Path(__file__).resolve().parents[1] / "data"


def test_runs_and_studies_given_on_the_command_line_are_all_listed(tmp_path):
    run = DATA / "runs" / "small-h200-analyses"
    advise_a, advise_b = tmp_path / "elsewhere" / "advise-a", tmp_path / "elsewhere" / "advise-b"
    for study in (advise_a, advise_b):
        shutil.copytree(DATA / "studies" / "advise-tiny-cpu", study)
    records = list_run_records(tmp_path / "runs", [run, advise_a, advise_b])
    assert sorted(Path(record["path"]).name for record in records) == sorted(
        ["small-h200-analyses", "advise-a", "advise-b"])

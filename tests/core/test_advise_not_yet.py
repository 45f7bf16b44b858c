"""While an advise runs, its answer says "not yet", never "no candidate beat the baseline": during the diagnosis
(no plan written), and once the plan is written but its candidates' cells are not all there. The saved tiny CPU
advise study, cut back to those moments."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from sysprof.profiler_core.studies.results import study_tables

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "studies" / "advise-tiny-cpu"


def answer(study_dir: Path) -> str:
    """The answer the Studies screen shows (none at all while the study has no answer table)."""
    return (study_tables(study_dir).get("recommended") or [{"answer": ""}])[0]["answer"]


def cut(tmp_path: Path, keep_cells: int, advice_keys: tuple[str, ...] | None = None) -> Path:
    study = tmp_path / "advise"
    shutil.copytree(FIXTURE, study)
    plan = json.loads((study / "sweep.json").read_text())
    plan["cells"] = plan["cells"][:keep_cells]
    (study / "sweep.json").write_text(json.dumps(plan))
    for cell in sorted((study / "cells").iterdir())[keep_cells:]:
        shutil.rmtree(cell)
    if advice_keys is not None:
        advice = json.loads((study / "advice.json").read_text())
        (study / "advice.json").write_text(json.dumps({k: v for k, v in advice.items() if k in advice_keys}))
    return study


def test_during_the_diagnosis_no_answer_is_claimed(tmp_path):
    study = cut(tmp_path, 1, ("baseline", "diagnosis_cell", "budget_s", "gpus", "goal"))
    assert answer(study) in ("", "not yet: the diagnosis is running")


def test_a_plan_written_before_its_cells_are_added_is_not_yet(tmp_path):
    """The moment between the diagnosis and the candidates: the plan names four, the study has none of them."""
    assert answer(cut(tmp_path, 1)) == "not yet: the candidates are being measured"


def test_a_plan_whose_candidates_are_not_all_in_the_study_yet_is_not_yet(tmp_path):
    assert answer(cut(tmp_path, 3)).startswith("not yet")  # the baseline and one candidate of four


def test_the_finished_study_still_answers(tmp_path):
    assert not answer(cut(tmp_path, 99)).startswith("not yet")

"""A real `sysprof advise --budget 5` of the CS336-style user model (benchmarks/user_models/rope_lm, fp32, batch 4)
on an H200 (tests/data/studies/advise-together-h200): the tables rebuilt from its directory say what docs/advisor.md and
benchmarks/studies/README.md quote, so a change to the statistics or the tables that moves them is seen here."""
from pathlib import Path

from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise.ceiling import CEILING_TABLE, tables
from sysprof.profiler_core.studies.kinds.advise.tables import CANDIDATES_TABLE, COMBINATION_TABLE

STUDY = Path(__file__).resolve().parents[1] / "data" / "studies" / "advise-together-h200"
AT_ONCE = "torch.compile reduce-overhead + batch 16 + bf16 autocast"


def test_the_change_at_once_passed_first_and_the_answer_held_measured_again():
    found = tables(Study.load(STUDY))
    measured = {row["candidate"]: row for row in found[CANDIDATES_TABLE] if row["status"] == "ok"}
    assert len(measured) >= 4 and measured[AT_ONCE]["tokens/s ×"] == "20.29 [17.57–23.44]"
    assert measured["bf16 autocast"]["tokens/s"] == "within noise"  # alone, against the launch-bound baseline
    combined = found[COMBINATION_TABLE]
    assert combined[1]["step"] == AT_ONCE and combined[1]["× baseline"] == "16.19 [15.64–16.76]"
    assert combined[2]["status"] == "not run"  # its batch doubled: over the budget
    [answer] = found[RECOMMENDED_TABLE]
    assert answer["answer"].startswith(f"{AT_ONCE}: tokens/s 16.19× [15.64–16.76]")
    assert "not tried on top of it (over the budget)" in answer["answer"]


def test_the_ceiling_puts_the_answers_step_at_2_4_times_its_matmuls_alone():
    alone, step = tables(Study.load(STUDY))[CEILING_TABLE]
    assert (alone["MFU %"], alone["of peak"], step["MFU %"], step["× matmuls' time"]) == (46.5, "bf16", 19.4, 2.39)

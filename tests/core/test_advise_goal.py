"""advise --goal: what the answer is best at. The verdict rests on the goal's row of `compare`, said in its words."""
from __future__ import annotations

import io
from contextlib import redirect_stderr
from pathlib import Path

from sysprof.profiler_core.analysis.compare import ENERGY_ROW, THROUGHPUT_ROW
from sysprof.profiler_core.analysis.verdicts import FASTER, SLOWER, WITHIN_NOISE
from sysprof.profiler_core.cli import main as cli
from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise import cell_verdicts as advise_verdicts
from sysprof.profiler_core.studies.kinds.advise import goal as advise_goal
from sysprof.profiler_core.studies.kinds.advise import tables as advise_tables
from sysprof.profiler_core.studies.results import study_tables


def said(argv):
    err = io.StringIO()
    with redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # argparse's own refusal
            code = exit_.code
    return code, err.getvalue()


def test_an_unknown_goal_and_energy_on_the_cpu_are_refused_in_one_line():
    code, text = said(["advise", "--model", "tiny", "--goal", "nosuch"])
    assert code == 2 and text.strip().splitlines() == [
        "sysprof advise: error: argument --goal: invalid choice: 'nosuch' (choose from 'energy', 'speed')"]
    code, text = said(["advise", "--model", "tiny", "--device", "cpu", "--goal", "energy"])
    assert code == 2 and text.strip() == ("sysprof: error: --goal energy ranks by the GPU's energy (NVML's counter); "
                                          "this config runs on the CPU")


def test_each_goal_rests_on_its_own_row_and_says_it_in_its_words():
    assert advise_goal.goal_of({}) is advise_goal.SPEED and advise_goal.goal_of({"goal": "energy"}).row == ENERGY_ROW
    assert advise_goal.SPEED.row == THROUGHPUT_ROW and advise_goal.ENERGY.min_block_s >= 1.0
    noise = {"verdict": WITHIN_NOISE, "n_a": 4, "n_b": 4, "reason": "p=0.2"}
    energy_why = advise_verdicts.why_not(noise, 0.0, goal=advise_goal.ENERGY)
    assert energy_why == "not more per joule beyond run-to-run noise (p=0.2; 4 processes a side)"
    assert advise_goal.within_noise(energy_why) and advise_goal.within_noise(advise_verdicts.why_not(noise, 0.0))
    assert advise_verdicts.why_not({"verdict": SLOWER}, 0.0, goal=advise_goal.ENERGY) == "less per joule"
    assert advise_verdicts.why_not({"verdict": FASTER}, 0.0, goal=advise_goal.ENERGY) is None
    assert advise_verdicts.why_not(None, 0.0, goal=advise_goal.ENERGY) == "no tokens/J to compare"


ENERGY_STUDY = Path(__file__).resolve().parents[1] / "data" / "studies" / "advise-energy-h200"


def test_a_real_energy_study_judges_and_answers_on_tokens_per_joule():
    """`advise --goal energy --budget 5` on an H200 (the CS336-style user model, fp32): the one candidate the budget
    afforded, 15.5× the tokens/s with an interval from 3 to 78 (two compiled processes against four), is judged on
    its tokens per joule, 9.06× [8.72–9.53], in the goal's words; the answer says what it rests on."""
    tables = study_tables(ENERGY_STUDY)
    row = tables[advise_tables.CANDIDATES_TABLE][0]
    assert row["tokens/J ×"] == "9.06 [8.72–9.53]" and row["tokens/J"] == "9.1× more per joule"
    assert row["why"] == "more per joule: measured again below" and row["tokens/s ×"].startswith("15.47")
    answer = tables[RECOMMENDED_TABLE][0]["answer"]
    assert answer.startswith("none confirmed: torch.compile reduce-overhead + batch 16 + bf16 autocast was more per "
                             "joule (9.06 [8.72–9.53]) once")
    cells = [Study.load(ENERGY_STUDY).cells[i].summary for i in (1, 2)]
    assert [len(summary["energy"]["per_process_tokens_per_joule"]) for summary in cells] == [4, 2]  # 1.5 s blocks
    assert "missing" in Study.load(ENERGY_STUDY).cells[0].summary["energy"]  # the diagnosis: one 0.72 s stretch

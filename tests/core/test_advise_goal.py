"""advise --goal: what the answer is best at. The verdict rests on the goal's row of `compare`, said in its words."""
from __future__ import annotations

import io
from contextlib import redirect_stderr

from sysprof.profiler_core.cli import main as cli
from sysprof.profiler_core.compare import ENERGY_ROW, FASTER, SLOWER, THROUGHPUT_ROW, WITHIN_NOISE
from sysprof.profiler_core.studies import advise_goal, advise_tables


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
    energy_why = advise_tables._why_not(noise, 0.0, goal=advise_goal.ENERGY)
    assert energy_why == "not more per joule beyond run-to-run noise (p=0.2; 4 processes a side)"
    assert advise_goal.within_noise(energy_why) and advise_goal.within_noise(advise_tables._why_not(noise, 0.0))
    assert advise_tables._why_not({"verdict": SLOWER}, 0.0, goal=advise_goal.ENERGY) == "less per joule"
    assert advise_tables._why_not({"verdict": FASTER}, 0.0, goal=advise_goal.ENERGY) is None
    assert advise_tables._why_not(None, 0.0, goal=advise_goal.ENERGY) == "no tokens/J to compare"

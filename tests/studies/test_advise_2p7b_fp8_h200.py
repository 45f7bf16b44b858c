"""A real `sysprof advise --budget 10` of the 2.7B preset from fp32 (ctx 512, batch 4, naive attention, foreach
AdamW) on an H200 (tests/data/studies/advise-2p7b-fp8-h200): one candidate, every kind of change at once with FP8 in
bf16's place, measured beside the baseline and adopted as the answer without a second measurement (it was chosen
among none). The tables rebuilt from its directory say what the README, docs/advisor.md and
benchmarks/studies/README.md quote."""
from pathlib import Path

from sysprof.profiler_core.documents.study_plans import RECOMMENDED_TABLE
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise.ceiling import CEILING_TABLE, tables
from sysprof.profiler_core.studies.kinds.advise.costs import spent_s
from sysprof.profiler_core.studies.kinds.advise.tables import ADOPTED_TABLE, COMBINATION_TABLE

STUDY = Path(__file__).resolve().parents[2] / "tests" / "data" / "studies" / "advise-2p7b-fp8-h200"
AT_ONCE = ("torch.compile reduce-overhead + FP8 linear layers (torchao) + batch 16 + fused optimizer step + "
           "SDPA attention")


def test_the_lone_candidate_is_the_answer_past_55_percent_mfu():
    found = tables(Study.load(STUDY))
    assert COMBINATION_TABLE not in found  # nothing was measured again
    baseline, step = found[ADOPTED_TABLE]
    assert (baseline["tokens/s"], baseline["MFU %"]) == (1940, 60.2)
    assert (step["step"], step["tokens/s"], step["MFU %"], step["of peak"]) == (AT_ONCE, 32684, 68.7, "bf16, fp8 run")
    assert step["× baseline"] == "16.84 [16.82–16.86]" and step["why"] == "helps"
    [answer] = found[RECOMMENDED_TABLE]
    assert answer["answer"] == f"{AT_ONCE}: tokens/s 16.84× [16.82–16.86] of the baseline's, measured once, the lone " \
                               "candidate"
    assert "--dtype fp8" in answer["command"] and "--batch 16" in answer["command"]


def test_its_processes_took_less_than_its_ten_minutes():
    assert 380 < spent_s(STUDY) < 600  # 402 s; the printout: the study ended 443 s after it started


def test_the_ceiling_times_the_fp8_answers_matmuls_in_bf16_and_says_so():
    alone, step = tables(Study.load(STUDY))[CEILING_TABLE]
    assert alone["what"] == "its matmuls alone (in bf16)" and (alone["MFU %"], step["MFU %"]) == (69.8, 68.7)

"""The advise study's ceiling: the answer's matmuls timed alone on this device (runner/ceiling.py), beside the
answer's measured step, so a user knows how far the answer is from what its matmuls alone would allow.

"Its matmuls alone: 48 ms/step, 71% MFU; the step: 80 ms, 43% MFU (1.7× its matmuls' time)" says the rest of the
step (attention's softmax, norms, the optimizer, launch gaps) costs as much again as the matmuls: room a fused
kernel, a larger batch or CUDA graphs might still take. The ceiling is measured once the answer is known (on the
baseline where there is none), after every other stage, and within the budget: the plan keeps CEILING_S for it.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.session.ceiling import measure_ceiling
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import Tables
from sysprof.profiler_core.studies.kinds.advise import refine as advise_refine
from sysprof.profiler_core.studies.kinds.advise.step_rows import combination_rows, helping_steps

CEILING_TABLE = "ceiling: the answer's matmuls timed alone on this device"
CEILING_S = {"cpu": 5.0, "cuda": 25.0}  # its process's start-up, one pass on the meta device, a few s of matmuls


def combination_answer(study: Study, combination: dict) -> tuple[int, dict] | None:
    """(cell index, step) of the combination's answer: its last step that helped; None where none did."""
    kept = helping_steps(combination_rows(study, combination))
    steps = combination.get("steps", [])
    names = [step["name"] for step in steps]
    if not kept or kept[-1]["step"] not in names:
        return None
    index = names.index(kept[-1]["step"])
    return combination["first_cell"] + 1 + index, steps[index]


def answer_cell(study: Study, advice: dict) -> tuple[str, int]:
    """(name, cell index) of the study's answer: a step on top of the combination's answer that helped, else that
    answer, else the baseline (the diagnosis's cell where no candidate ran)."""
    refine = advice.get("refine") or {}
    refined = advise_refine.rows(study, refine) if refine else []
    better = advise_refine.best_helping(refined[2:])
    if better is not None:
        names = [step["name"] for step in refine["steps"]]
        return better["step"], refine["first_cell"] + 2 + names.index(better["step"])
    found = combination_answer(study, advice.get("combination") or {})
    if found is not None:
        return found[1]["name"], found[0]
    first = advice.get("first_cell")
    return "the baseline", first if first is not None else advice.get("diagnosis_cell", 0)


def measure(study_dir: Path, announce: Callable[[str], None] = lambda name: None) -> None:
    """The answer's ceiling, once per answer (a resume that changed the answer measures again); announce(name) as
    it starts."""
    study = Study.load(study_dir)
    advice = rundir.read_json(study_dir / rundir.ADVICE_PLAN) or {}
    name, index = answer_cell(study, advice)
    if index >= len(study.cells) or study.cells[index].summary is None:
        return
    done = rundir.read_json(study_dir / rundir.CEILING) or {}
    if done.get("cell") == index and "error" not in done:  # a ceiling that failed is tried again on a resume
        return
    announce(name)
    record = measure_ceiling(study.cells[index].config, study_dir / rundir.CEILING_STDERR)
    rundir.write_json(study_dir / rundir.CEILING, {"name": name, "cell": index, **record})


def tables(study: Study) -> Tables:
    """The study's tables (advise_refine.tables), with the ceiling's where it was measured."""
    found = advise_refine.tables(study)
    record = rundir.read_json(study.path / rundir.CEILING)
    if isinstance(record, dict) and isinstance(record.get("cell"), int) and record["cell"] < len(study.cells):
        found[CEILING_TABLE] = ceiling_rows(record, study.cells[record["cell"]].summary or {})
    return found


def ceiling_rows(record: dict, summary: dict) -> list[dict[str, Any]]:
    """Its matmuls alone, then the step as measured: ms per step and MFU of the same peak, and how many times its
    matmuls' time the step takes."""
    if "error" in record:
        return [{"of": record.get("name"), "what": "its matmuls alone", "why": record["error"]}]
    step = ((summary.get("phases") or {}).get("step") or {}).get("median_ms")
    alone = record.get("ms_per_step")
    alone_in = " (in bf16)" if (summary.get("config") or {}).get("dtype") == "fp8" else ""
    return [{"of": record.get("name"), "what": f"its matmuls alone{alone_in}", "ms/step": _round(alone),
             "TFLOP/s": _round(record.get("tflops")), "MFU %": _percent(record.get("mfu")),
             "of peak": record.get("precision") if record.get("mfu") is not None else None},
            {"of": record.get("name"), "what": "the step, measured", "ms/step": _round(step),
             "TFLOP/s": _round(summary.get("tflops")), "MFU %": _percent(summary.get("mfu")),
             "of peak": summary.get("precision_used") if summary.get("mfu") is not None else None,
             "× matmuls' time": _round(step / alone) if step and alone else None}]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2 if value < 100 else 0)


def _percent(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 1)

"""The ab kind: A and B as a sweep of two cells run interleaved in time (studies/sweep.py: its round-robin
reverses every other round), so that whatever drifts on a shared node (clocks, other tenants, warm caches) hits
both alike; kept in a study directory like any sweep, its table B against A as `sysprof compare` prints it."""
from __future__ import annotations

import argparse
from pathlib import Path

from sysprof.profiler_core.analysis.compare import compare_summaries, config_differences
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.documents.study_plans import AB_STUDY
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kind import StudyKind, Tables
from sysprof.profiler_core.studies.kinds.ab.sides import ab_configs, add_side_options
from sysprof.profiler_core.studies.progress import Progress
from sysprof.profiler_core.tables.compare_tables import compare_model


def run(args: argparse.Namespace) -> Path:
    """Both sides checked, then their processes interleaved; the pair's study directory."""
    cfg_a, cfg_b = ab_configs(args)
    differences = config_differences(cfg_a.to_dict(), cfg_b.to_dict())
    study_dir = sweep.create(rundir.runs_root(args.runs_dir), "ab", [cfg_a, cfg_b], sorted(differences), AB_STUDY)
    with Progress(args.events).recorded(study_dir) as progress:
        sweep.run(study_dir, progress.sweep_listener("ab", study_dir), args.nsys)
    return study_dir


def tables(study: Study) -> Tables:
    """B against A as compare prints it (none until both sides have finished processes)."""
    summaries = study.summaries
    if len(summaries) != 2 or not all(s and s.get("status") == events.OK for s in summaries):
        return {}
    summary_a, summary_b = summaries
    assert summary_a is not None and summary_b is not None
    rows = compare_summaries(summary_a, summary_b)
    shown = compare_model(rows).records()
    return {"B against A": [record | {"interleaved": row["interleaved"]} for record, row in zip(shown, rows)]}


KIND = StudyKind(AB_STUDY, "A against B on this node: both in fresh processes, interleaved in time",
                 add_side_options, run, tables, order=90,
                 templates={"ab: foreach against fused AdamW": "study ab --model small --a=--optimizer-impl=foreach "
                                                               "--b=--optimizer-impl=fused"},
                 cpu_templates={"ab: foreach against fused AdamW (CPU)": "study ab --model tiny --device cpu --ctx 64 "
                                "--steps 5 --warmup 2 --a=--optimizer-impl=foreach --b=--optimizer-impl=fused"})

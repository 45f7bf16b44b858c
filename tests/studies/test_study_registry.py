"""Study kinds are one module each, found by the registry: the CLI, the results tables and the app's list take a
kind from KINDS alone. A kind added to the registry (here in the test, as a new module would be) reaches all three
without a line elsewhere."""
from __future__ import annotations

import pkgutil
from pathlib import Path

import pytest

from sysprof.profiler_core import api
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.cli.main import build_parser
from sysprof.profiler_core.studies import kinds as kinds_package
from sysprof.profiler_core.studies import results
from sysprof.profiler_core.studies.kind import StudyKind
from sysprof.profiler_core.studies.kinds import KINDS


def test_every_module_of_the_folder_is_a_kind_and_the_seed_studies_and_scaling_are_there():
    modules = {module.name for module in pkgutil.iter_modules(kinds_package.__path__)}
    assert set(KINDS) == modules == {"ab", "advise", "warmup", "compile", "precision", "passes", "attention",
                                             "scaling"}
    assert all(isinstance(kind, StudyKind) and kind.help and kind.templates for kind in KINDS.values())


@pytest.fixture
def extra_kind(monkeypatch):
    def add_arguments(parser):
        parser.add_argument("--knob", default="1")

    def tables(study):
        return {"knob table": [{"knob": study.plan.get("knob")}]}

    kind = StudyKind("knob", "a kind that exists only in this test", add_arguments, lambda args: Path(), tables,
                     templates={"knob study": "study knob --knob 2"}, cpu_templates={"knob (CPU)": "study knob"},
                     sweep_cells=False)
    monkeypatch.setitem(KINDS, "knob", kind)
    return kind


def test_a_kind_in_the_registry_reaches_the_cli_the_tables_and_the_app(extra_kind, tmp_path):
    args = build_parser().parse_args(["study", "knob", "--knob", "7", "--runs-dir", str(tmp_path)])
    assert (args.study, args.knob) == ("knob", "7")  # its own arguments, and the ones every study has
    rundir.write_json(tmp_path / rundir.ATTENTION_PLAN, {"study": "knob", "knob": 7})
    assert results.study_tables(tmp_path) == {"knob table": [{"knob": 7}]}
    assert api.studies.study_templates(on_gpu=True)["knob study"] == "study knob --knob 2"
    assert api.studies.study_templates(on_gpu=False)["knob (CPU)"] == "study knob"


def test_the_app_lists_the_sweeps_and_every_kinds_templates():
    from sysprof.tui.model.study_commands import study_choices

    on_gpu, on_cpu = study_choices(on_gpu=True), study_choices(on_gpu=False)
    assert next(iter(on_cpu)) == "sweep: tiny × ctx × batch (CPU)"  # the first choice, as before
    for kind in KINDS.values():
        assert set(kind.templates) <= set(on_gpu) and set(kind.cpu_templates) <= set(on_cpu)
    assert list(on_gpu)[-1] == "custom sweep"

"""The sections of `sysprof report` (cli/report.py) for one directory each: a run's (what ran, the command to run it
again, its headline as the CLI prints it, its tables, its figures) and a sweep's or study's (its plan, its tables and
the figures drawn from them); with the tables made readable and the Drawer that draws figures once matplotlib is
there. Apart from report.py, which assembles the document, writes it and compares runs side by side."""
from __future__ import annotations

import io
import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base.errors import ExportError
from sysprof.profiler_core.cli.export import run_tables, warn_notes, warn_of_damage
from sysprof.profiler_core.documents.run_document import MEMORY, Run
from sysprof.profiler_core.render import report_figures as figures
from sysprof.profiler_core.render import report_writers as blocks
from sysprof.profiler_core.render.report_writers import Block
from sysprof.profiler_core.tables.model import TableModel

DIGITS = 4  # significant digits of a report's table cells (an export keeps 6): a document is read, not parsed
SKIPPED_TABLES = {"steps": "one row per step: `sysprof export {path} --table steps`"}
MACHINE_FIELDS = (("device_name", "device name"), ("driver_version", "driver"), ("cuda_version", "CUDA"),
                  ("torch_version", "torch"), ("python_version", "Python"), ("hostname", "host"))
KERNEL_TABLES, KERNELS_PER_PHASE = ("kernels", "attention kernels"), 10  # long: each phase's largest, base names


def readable(records: list[dict]) -> list[dict]:
    """A table as a document shows it: floats to DIGITS significant digits, and no column empty in every row."""
    shown = [key for key in dict.fromkeys(key for record in records for key in record)
             if any(record.get(key) is not None for record in records)]
    return [{key: _rounded(record.get(key)) for key in shown} for record in records]


def _rounded(value):
    return float(f"{value:.{DIGITS}g}") if isinstance(value, float) and math.isfinite(value) else value


def readable_table(title: str, records: list[dict]) -> Block:
    return blocks.table(title, readable(records))


class Drawer:
    """Draws a figure into the report's figures folder, once matplotlib is known to be there."""

    def __init__(self, directory: Path | None):
        self.directory, self.count, self.missing = directory, 0, False

    def __call__(self, title: str, stem: str, make: Callable[[], Any]) -> list[Block]:
        if self.directory is None or self.missing:
            return []
        try:
            figure = make()
        except ImportError:
            self.missing = True
            return []
        if figure is None:
            return []
        try:
            paths = figures.save(figure, self.directory, stem)
        except OSError as exc:
            raise ExportError(f"cannot write the figure {stem} into {self.directory}: {exc.strerror or exc}") from None
        self.count += 1
        return [blocks.figure(title, paths)]


# --- a run ------------------------------------------------------------------------------------------------------

def run_blocks(run: Run, draw: Drawer) -> list[Block]:
    made = [blocks.heading(f"Run {run.path.name}"), readable_table("what ran", what_ran(run))]
    command = (run.manifest or {}).get("command")
    made.append(blocks.text("To run it again (the options as typed; the table above pins every default):"))
    made.append(blocks.code(command or "(not recorded)"))
    if run.summary:
        made += [blocks.text("As `sysprof run` printed it:"), blocks.code(headline_text(run))]
    else:
        made.append(blocks.text(f"No summary: the run is {run.status} (not finished, or its process died before "
                                "writing one); what it wrote is below."))
    tables = run_tables(run)
    warn_of_damage(run)
    made += [blocks.text(f"Damaged: {note}.") for note in run.damage_notes()]
    for name, records in tables.items():
        if name in SKIPPED_TABLES:
            made.append(blocks.text(f"Not shown: {name}, {SKIPPED_TABLES[name].format(path=run.path)}."))
        elif name in KERNEL_TABLES and records:
            made += kernel_table_blocks(name, records, run.path)
        elif records:
            made.append(readable_table(name, records))
    return made + run_figures(run, tables.get("kernels") or [], draw)


def kernel_table_blocks(name: str, records: list[dict], path: Path) -> list[Block]:
    """The largest kernels of each phase (or attention sub-range), their names shortened to the base name as the
    CLI shows them; the whole table is one export away."""
    from sysprof.profiler_core.kernels.names import short_kernel_name

    group = "phase" if "phase" in records[0] else "sub-range"
    kept: list[dict] = []
    seen: dict[Any, int] = {}
    for record in records:  # the rows come largest first within each group
        seen[record.get(group)] = seen.get(record.get(group), 0) + 1
        if seen[record.get(group)] <= KERNELS_PER_PHASE:
            kept.append(record | {"name": short_kernel_name(str(record.get("name", "")))})
    shown = f"the {KERNELS_PER_PHASE} largest per {group}, base names" if len(kept) < len(records) else "base names"
    return [readable_table(f"{name} ({shown})", kept),
            blocks.text(f"All {len(records)} rows with whole names: `sysprof export {path} --table '{name}'`.")]


def what_ran(run: Run) -> list[dict]:
    summary: dict[str, Any] = dict(run.summary or {})
    manifest = run.manifest or {}
    config = summary.get("config") or manifest.get("config") or {}
    env = summary.get("env") or manifest.get("env") or {}
    rows = [{"field": name, "value": value} for name, value in config.items() if value not in (None, [], {})]
    if summary.get("params"):
        rows.insert(1, {"field": "parameters", "value": f"{summary['params']:,}"})
    rows += [{"field": label, "value": env[key]} for key, label in MACHINE_FIELDS if env.get(key)]
    profile = summary.get("profile") or {}
    if profile.get("backend"):
        rows.append({"field": "profiled with",
                     "value": f"{profile['backend']} {profile.get('version') or ''}".strip()})
    return rows


def headline_text(run: Run) -> str:
    """The run's headline exactly as the CLI prints it into a log (tables at their natural width)."""
    from sysprof.profiler_core.render.run_report import print_headline
    from sysprof.profiler_core.render.whole_tables import WholeTablesConsole

    out = io.StringIO()
    assert run.summary is not None  # run_blocks quotes only a run that has one
    print_headline(WholeTablesConsole(file=out, width=100, force_terminal=False, color_system=None),
                   run.summary, run.path)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip().splitlines())


def run_figures(run: Run, kernels: list[dict], draw: Drawer) -> list[Block]:
    stem = run.path.name
    made = draw(f"{stem}: step time by phase", f"{stem}-phases",
                lambda: figures.phase_bars([(stem, run.phases)]))
    made += draw(f"{stem}: kernel classes per phase", f"{stem}-kernel-classes",
                 lambda: figures.kernel_class_bars(kernels))
    timeline = (run.analysis(MEMORY) or {}).get("timeline") or {}
    if timeline.get("active_bytes") and draw.directory is not None and not draw.missing:
        made += _memory_timeline(run, timeline, draw, draw.directory)
    return made


def _memory_timeline(run: Run, timeline: dict, draw: Drawer, directory: Path) -> list[Block]:
    from sysprof.profiler_core.render.memory_plot import write_timeline_images

    try:
        paths = write_timeline_images(timeline, directory, f"{run.path.name}: active memory",
                                      f"{run.path.name}-memory-timeline")
    except ImportError:
        draw.missing = True
        return []
    draw.count += 1
    return [blocks.figure(f"{run.path.name}: active memory over the recorded steps", paths)]


# --- a study ----------------------------------------------------------------------------------------------------

def study_blocks(path: Path, draw: Drawer) -> list[Block]:
    from sysprof.profiler_core.studies.document import Study
    from sysprof.profiler_core.studies.table_models import study_models

    study = Study.load(path)
    made = [blocks.heading(f"{study.kind} study {path.name}"), readable_table("what ran", study_what_ran(study)),
            blocks.text("To run it again:"),
            blocks.code(study.plan.get("command") or "(not recorded: the study predates sysprof recording it)")]
    models = study_models(path)
    warn_notes(study.damage_notes())
    made += [blocks.text(f"Damaged: {note}.") for note in study.damage_notes()]
    made += [readable_table(model.title, [dict(row) for row in model.rows]) for model in models if model.rows]
    return made + study_figures(path.name, models, draw)


def study_what_ran(study) -> list[dict]:
    plan = {key: value for key, value in study.plan.items() if key not in ("cells", "command", "created", "machine")}
    rows = [{"field": key, "value": ", ".join(map(str, value)) if isinstance(value, list) else value}
            for key, value in plan.items()]
    rows.append({"field": "cells", "value": len(study.plan.get("cells") or [])})
    if study.cells:  # a sweep: the settings every cell shares, and the machine its first cell ran on
        first = study.cells[0].config.to_dict()
        rows += [{"field": key, "value": value} for key, value in first.items()
                 if key not in study.varied and value not in (None, [], {})]
        env = (study.cells[0].summary or {}).get("env") or {}
        rows += [{"field": label, "value": env[key]} for key, label in MACHINE_FIELDS if env.get(key)]
    machine = study.plan.get("machine") or {}  # the attention study's driver records the GPU it ran on
    rows += [{"field": label, "value": machine[key]} for key, label in (("gpu", "device name"),
                                                                          ("driver_version", "driver"))
             if machine.get(key)]
    return rows


def study_figures(name: str, models: list[TableModel], draw: Drawer) -> list[Block]:
    made: list[Block] = []
    for index, model in enumerate(models):
        for label, panels in model.figures:
            caption = f"{name}: {model.title}" + (" (speed-ups)" if label == "speedups" else "")
            made += draw(caption, f"{name}-{index}-{label}", partial(figures.draw_panels, panels))
    return made

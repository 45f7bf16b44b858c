"""`sysprof export PATH [--table NAME] [--pivot ROWS:COLUMNS [--value V]] [--output FILE | --format md|csv|json|tex]
[--list]`: any table of a run or study directory, in the shapes the app exports."""
from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import ConfigError
from sysprof.profiler_core.base.records import phases_of
from sysprof.profiler_core.documents.run_document import KERNELS, MEMORY, Run
from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.kernels.attention_flops import sub_range_rows
from sysprof.profiler_core.render import export
from sysprof.profiler_core.tables.memory_tables import category_rows
from sysprof.profiler_core.tables.model import TableModel, export_tables
from sysprof.profiler_core.tables.module_tables import kernel_module_rows, memory_module_rows
from sysprof.profiler_core.tables.run_tables import phase_kernel_model, ranks_model

FORMATS = {"md": "markdown", "csv": "csv", "json": "json", "tex": "latex"}


def add_export_options(parser) -> None:
    parser.add_argument("path", type=Path, help="a run directory or a sweep/study directory")
    parser.add_argument("--table", help="which table (a name, or the start of only one; default: the first)")
    parser.add_argument("--output", help="write to PATH (.csv, .md, .json, .tex); default: stdout")
    parser.add_argument("--format", choices=list(FORMATS),
                        help="stdout format (default md); with --output the file's suffix picks it")
    parser.add_argument("--list", action="store_true", help="list the tables of PATH")
    parser.add_argument("--pivot", metavar="ROWS:COLUMNS",
                        help="pivot the table, as `sysprof sweep --pivot` does (e.g. model:ctx)")
    parser.add_argument("--value", help="the value a pivot shows (default: fwd mean ms)")


def run_tables(run: Run) -> dict[str, list[dict]]:
    """phases, steps, and, where the passes ran, kernels and the largest allocations (and by module type with
    --nvtx-modules)."""
    tables = {"phases": [{"phase": name} | stats for name, stats in run.phases.items()],
              "steps": [dict(step) for step in run.steps]}
    kernels = run.path / rundir.KERNELS_DIR / rundir.PHASE_KERNELS
    if kernels.is_file():
        tables["kernels"] = whole_csv_rows(run, kernels)
    analysis = run.analysis(KERNELS) or {}
    tables |= export_tables(run_models(run))
    tables |= attention_run_tables(run.path, analysis.get("attention") or {})
    module_rows = kernel_module_rows(analysis)
    if module_rows:
        tables["module types"] = module_rows
    memory = run.analysis(MEMORY) or {}
    if memory.get("by_category"):
        tables["memory by category"] = category_rows(memory)
    if memory.get("top_allocations"):
        tables["top allocations"] = memory["top_allocations"]
    if memory_module_rows(memory):
        tables["memory by module type"] = memory_module_rows(memory)
    return tables


def run_models(run: Run) -> list[TableModel]:
    """The run's tables that the CLI and the app also show (render/table_models), exported as shown."""
    models = []
    ranks = run.summary.get("ranks") if run.summary else None
    if ranks:
        models.append(ranks_model(ranks))
    if phases_of(run.analysis(KERNELS)):
        models.append(phase_kernel_model(run.analysis(KERNELS) or {}))
    return models


def attention_run_tables(run_dir: Path, attention: Mapping[str, Any]) -> dict[str, list[dict]]:
    """Naive attention's sub-ranges: their kernel time, FLOPs against time, and the kernels of each."""
    tables = {}
    if sub_range_rows(attention):
        tables["attention sub-ranges"] = sub_range_rows(attention)
    if attention.get("flops"):
        tables["attention FLOPs vs time"] = list(attention["flops"])
    parts = run_dir / rundir.KERNELS_DIR / rundir.ATTENTION_KERNELS
    if parts.is_file():
        import pandas as pd

        tables["attention kernels"] = pd.read_csv(parts).rename(columns={"phase": "sub-range"}).to_dict("records")
    return tables


def whole_csv_rows(run: Run, path: Path) -> list[dict]:
    """A CSV's rows; one that ends mid-row was cut short (a full disk, a copy stopped): its whole rows are kept and
    the cut is said in the run's problems, never read as a row of junk."""
    import io

    import pandas as pd

    text = path.read_text(errors="replace")
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
        run.problems[f"{path.parent.name}/{path.name}"] = f"{path} ends mid-row (cut short)"
    return pd.read_csv(io.StringIO(text)).to_dict("records") if text.strip() else []


def directory_tables(path: Path) -> dict[str, list[dict]]:
    if study_kind(path) is not None:
        from sysprof.profiler_core.studies.document import Study
        from sysprof.profiler_core.studies.table_models import study_models

        tables = {model.title: model.records() for model in study_models(path)}
        warn_notes(Study.load(path).damage_notes())
        return tables
    if not (path / rundir.MANIFEST).is_file():
        raise ConfigError(f"{path} is neither a run directory (no {rundir.MANIFEST}) nor a sweep or study directory")
    run = Run.load(path)
    tables = run_tables(run)
    warn_of_damage(run)
    return tables


def warn_of_damage(run: Run) -> None:
    """A damaged file whose tables were left out, said on stderr (the output stays the tables)."""
    warn_notes(run.damage_notes())


def warn_notes(notes) -> None:
    for note in notes:
        sys.stderr.write(f"sysprof: warning: {note}\n")


def pick(tables: dict[str, list[dict]], wanted: str | None) -> tuple[str, list[dict]]:
    if wanted is None:
        return next(iter(tables.items()))
    if not wanted.strip():  # every name starts with "": that would be a silent pick of the first
        raise ConfigError(f"--table needs a name; choose from {', '.join(map(repr, tables))}")
    exact = [name for name in tables if name.lower() == wanted.lower()]
    matches = exact or [name for name in tables if name.lower().startswith(wanted.lower())]
    if not matches:
        raise ConfigError(f"--table: no table {wanted!r}; choose from {', '.join(map(repr, tables))}")
    if len(matches) > 1:  # the first of several would be a silent guess
        raise ConfigError(f"--table: {wanted!r} starts {len(matches)} tables; say which: "
                          f"{', '.join(map(repr, matches))}")
    return matches[0], tables[matches[0]]


def command_export(args) -> int:
    tables = directory_tables(args.path)
    if args.list:
        for name, records in tables.items():
            print(f"{name}\t{len(records)} rows")
        return 0
    if args.output:
        export.check_writable(args.output)
        _check_format_matches(args.output, args.format)
    name, records = pick(tables, args.table)
    if not records:
        raise ConfigError(f"table {name!r} of {args.path} has no rows")
    if args.value and not args.pivot:
        raise ConfigError("--value chooses what a pivot shows: give --pivot ROWS:COLUMNS with it")
    if args.pivot:
        from sysprof.profiler_core.studies.tables import averaging_note, pivot_fields, pivot_or_error

        note = averaging_note(records, *pivot_fields(args.pivot))
        records = export.table_records(pivot_or_error(records, args.pivot, args.value or "fwd mean ms"))[1]
        if note:  # on stderr: the exported table stays the table
            sys.stderr.write(note + "\n")
    if args.output:
        written = export.write_table(records, args.output)
        sys.stderr.write(f"wrote {name!r} ({len(records)} rows) to {written}\n")
    else:
        sys.stdout.write(export.render(records, FORMATS[args.format or "md"]))
    return 0


def _check_format_matches(output: str, fmt: str | None) -> None:
    """--format beside --output must say what the suffix says: a silent choice between the two would lose one."""
    if fmt and FORMATS[fmt] != export.format_for_path(output):
        raise ConfigError(f"--format {fmt} does not match {output}: the file's suffix picks its format; drop --format "
                          f"or name the file …{'.' + fmt}")

"""`sysprof report PATH… [-o report.md | report.html] [--tables-only report.tex]`: one document from run and
study directories — what ran and how to run it again, the headline numbers with their spread and warnings as the
CLI prints them, every table the directory holds, and figures drawn from those same tables. Nothing is retyped:
each number is read from the directories, and runs are compared only as `sysprof compare` compares them."""
from __future__ import annotations

import datetime
import sys
import tempfile
from pathlib import Path

from sysprof.profiler_core.analysis.compare import (
    compare_summaries,
    config_differences,
    differences_text,
    ordering,
    other_step_fields,
)
from sysprof.profiler_core.analysis.verdicts import MIN_EFFECT
from sysprof.profiler_core.base import events, rundir
from sysprof.profiler_core.base.errors import ExportError, UsageError
from sysprof.profiler_core.cli.compare import comparison_notes
from sysprof.profiler_core.cli.report_sections import Drawer, readable_table, run_blocks, study_blocks
from sysprof.profiler_core.documents.run_document import Run
from sysprof.profiler_core.documents.study_plans import study_kind
from sysprof.profiler_core.render import report_figures as figures
from sysprof.profiler_core.render import report_writers as blocks
from sysprof.profiler_core.render.export import check_folder_writable
from sysprof.profiler_core.render.report_writers import Block
from sysprof.profiler_core.tables.compare_tables import compare_model

SUFFIXES, DEFAULT_OUTPUT = (".md", ".html"), "report.md"


def add_report_options(parser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, help="run directories and sweep or study directories")
    parser.add_argument("-o", "--output", type=Path,
                        help="report.md (Markdown; figures as PNG and SVG in report_figures/ beside it) or "
                             "report.html (one self-contained file); default report.md")
    parser.add_argument("--tables-only", type=Path, metavar="FILE.tex",
                        help="write every table as LaTeX to FILE.tex instead (no figures)")


def command_report(args) -> int:
    if args.tables_only and args.output:
        raise UsageError("-o and --tables-only each name the one file written: give one of them")
    seen = [path.resolve() for path in args.paths]
    same = [path for index, path in enumerate(args.paths) if seen[index] in seen[:index]]
    if same:  # two runs side by side would be compared: a run with itself is no comparison
        raise UsageError(f"{same[0]} is given twice; report on different directories")
    target = args.tables_only or args.output or Path(DEFAULT_OUTPUT)
    _check_suffix(target, (".tex",) if args.tables_only else SUFFIXES)
    kinds = [_kind(path) for path in args.paths]
    check_folder_writable(target)  # after the paths: a mistake in them leaves no folder made
    html = not args.tables_only and target.suffix.lower() == ".html"
    with tempfile.TemporaryDirectory() as scratch:  # an HTML page carries its figures: none are left beside it
        figures_dir = None if args.tables_only else Path(scratch) if html else \
            target.with_name(f"{target.stem}_figures")
        built, drawn = build(args.paths, kinds, figures_dir)
        if args.tables_only:
            text = blocks.latex_tables(built)
        elif html:
            text = blocks.html_document(built, _title(args.paths))
        else:
            text = blocks.markdown(built, target)
    try:
        rundir.write_whole(target, text)
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
    tables = sum(block.kind == "table" for block in built)
    where = f"; figures in {figures_dir}" if drawn and not html else ""
    sys.stderr.write(f"wrote {target} ({_count(tables, 'table')}, {_count(drawn, 'figure')}{where})\n")
    return 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _check_suffix(target: Path, suffixes: tuple[str, ...]) -> None:
    """The suffix picks the format."""
    if target.suffix.lower() not in suffixes:
        raise UsageError(f"{target}: end the name in {' or '.join(suffixes)} to pick the format")


def _kind(path: Path) -> str:
    if not path.is_dir():
        raise UsageError(f"{path}: no such directory")
    if study_kind(path) is not None:
        return "study"
    if (path / rundir.MANIFEST).is_file():
        return "run"
    raise UsageError(f"{path} is neither a run directory (no {rundir.MANIFEST}) nor a sweep or study directory")


def _title(paths: list[Path]) -> str:
    return "sysprof report: " + ", ".join(path.name for path in paths)


def build(paths: list[Path], kinds: list[str], figures_dir: Path | None) -> tuple[list[Block], int]:
    """The report's blocks, and how many figures were drawn into figures_dir (None: none are)."""
    draw = Drawer(figures_dir)
    made = [blocks.heading(_title(paths), 1), blocks.text(
        f"Made by `sysprof report` on {datetime.date.today().isoformat()} from the directories below; every number "
        "is read from them (their tables, as `sysprof export` writes them).")]
    runs = []
    for path, kind in zip(paths, kinds):
        if kind == "run":
            run = Run.load(path)
            runs.append(run)
            made += run_blocks(run, draw)
        else:
            made += study_blocks(path, draw)
    if len(runs) > 1:
        made += comparison_blocks(runs, draw)
    if draw.missing:
        made.insert(2, blocks.text(figures.MISSING_MATPLOTLIB))
        sys.stderr.write(figures.MISSING_MATPLOTLIB + "\n")
    return made, draw.count


# --- runs side by side ------------------------------------------------------------------------------------------

def comparison_blocks(runs: list[Run], draw: Drawer) -> list[Block]:
    """Each run against the first, as `sysprof compare` states it; runs of different steps are not compared."""
    first = runs[0]
    made = [blocks.heading("Comparison"), blocks.text(
        f"Each run against A = {first.path.name}, as `sysprof compare` states it (minimum effect {MIN_EFFECT:.1%}, "
        "raised to the between-process spread where larger).")]
    for other in runs[1:]:
        made += _pair_blocks(first, other)
    phases = [(run.path.name, run.phases) for run in runs if run.summary]
    return made + draw("step time by phase, all runs", "runs-phases", lambda: figures.phase_bars(phases))


def _pair_blocks(run_a: Run, run_b: Run) -> list[Block]:
    title = f"B = {run_b.path.name} against A = {run_a.path.name}"
    summary_a, summary_b = run_a.summary, run_b.summary
    if not summary_a or not summary_b or events.OK not in {summary_a.get("status")} & {summary_b.get("status")}:
        return [blocks.text(f"{title}: not compared; only runs that finished can be.")]
    differences = config_differences(summary_a.get("config") or {}, summary_b.get("config") or {})
    other = other_step_fields(differences)
    if other:
        changed = differences_text(differences, other)
        return [blocks.text(f"{title}: not compared, the runs measure different steps ({changed}); "
                            f"`sysprof compare {run_a.path} {run_b.path} --force` compares them anyway.")]
    rows = compare_summaries(summary_a, summary_b, MIN_EFFECT)
    if not rows:
        return [blocks.text(f"{title}: not compared; the two runs have no phase in common.")]
    records = compare_model(rows).records()
    notes = comparison_notes(MIN_EFFECT, differences, ordering(summary_a, summary_b))
    return [readable_table(title, records), *(blocks.text(note) for note in notes)]

"""Tables to text: CSV, Markdown pipe tables, JSON, LaTeX tabular; and OSC 52 clipboard sequences.

A table is a pandas DataFrame or a list of dicts (pandas is never imported here). Pure functions plus one
writer that turns every filesystem problem into ExportError with a one-line reason.
"""
from __future__ import annotations

import base64
import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path

from sysprof.profiler_core.base.errors import ExportError
from sysprof.profiler_core.base.rundir import write_whole
from sysprof.profiler_core.base.units import significant

FORMAT_BY_SUFFIX = {".csv": "csv", ".md": "markdown", ".json": "json", ".tex": "latex"}
SUFFIX_BY_FORMAT = {fmt: suffix for suffix, fmt in FORMAT_BY_SUFFIX.items()}
LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  # the tool's own symbols, so pdflatex takes its tables without a Unicode package
                  "×": r"$\times$", "÷": r"$\div$", "±": r"$\pm$", "µ": r"$\mu$", "σ": r"$\sigma$",
                  "ᵀ": r"$^{T}$", "≥": r"$\geq$", "≤": r"$\leq$", "≠": r"$\neq$", "–": "--", "—": "---",
                  "…": r"\ldots{}", "→": r"$\rightarrow$"}




def table_records(table) -> tuple[list[str], list[dict]]:
    """(column names, rows) of a DataFrame or a list of dicts (columns in first-seen order)."""
    if hasattr(table, "to_dict") and hasattr(table, "columns"):
        return [str(c) for c in table.columns], table.to_dict("records")
    columns: dict[str, None] = {}
    for row in table:
        columns.update(dict.fromkeys(row))
    return list(columns), list(table)


def _plain(value):
    """numpy scalars and NaN → plain JSON values."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def cell_text(value) -> str:
    """Short human text for Markdown and LaTeX: 6 significant digits for floats, blank for missing."""
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return significant(value)
    return str(value)


def to_csv(table) -> str:
    columns, rows = table_records(table)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: _plain(row.get(c)) for c in columns} for row in rows)
    return buffer.getvalue()


def markdown_text(text: str) -> str:
    """Text that is not ours (a run folder's name, a factory's file, a --model-arg value, a kernel's template) as
    Markdown shows it: never live HTML, whatever it holds (`<img onerror=…>` reads as the text it is)."""
    return text.replace("<", "&lt;").replace(">", "&gt;")  # an entity decodes to text, never to a tag


def to_markdown(table) -> str:
    columns, rows = table_records(table)
    escape = lambda text: markdown_text(text).replace("|", r"\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(escape(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(escape(cell_text(row.get(c))) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_json(table) -> str:
    columns, rows = table_records(table)
    return json.dumps([{c: _plain(row.get(c)) for c in columns} for row in rows], indent=1) + "\n"


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(char, char) for char in text)


def to_latex(table) -> str:
    columns, rows = table_records(table)
    numeric = [any(isinstance(_plain(row.get(c)), (int, float)) and not isinstance(row.get(c), bool) for row in rows)
               for c in columns]  # numbers right-aligned, as every other view of a table has them
    lines = [r"\begin{tabular}{" + "".join("r" if n else "l" for n in numeric) + "}", r"\hline",
             " & ".join(latex_escape(c) for c in columns) + r" \\", r"\hline"]
    lines += [" & ".join(latex_escape(cell_text(row.get(c))) for c in columns) + r" \\" for row in rows]
    return "\n".join(lines + [r"\hline", r"\end{tabular}"]) + "\n"


RENDERERS = {"csv": to_csv, "markdown": to_markdown, "json": to_json, "latex": to_latex}


def render(table, fmt: str) -> str:
    if fmt not in RENDERERS:
        raise ExportError(f"unknown format {fmt!r}; use one of {', '.join(RENDERERS)}")
    return RENDERERS[fmt](table)


def format_for_path(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMAT_BY_SUFFIX:
        raise ExportError(f"{path}: end the name in {', '.join(FORMAT_BY_SUFFIX)} to pick the format")
    return FORMAT_BY_SUFFIX[suffix]


def check_writable(path: str | Path) -> None:
    """Fail now, with the reason, if write_table(path) would fail later (format or folder)."""
    path = Path(path).expanduser()
    format_for_path(path)
    check_folder_writable(path)


def check_folder_writable(path: Path) -> None:
    """Fail now, with the reason, if no file can be written where path goes."""
    name_max = _name_max(path.parent)
    if name_max and len(os.fsencode(path.name)) > name_max:
        raise ExportError(f"cannot write {path}: its name is {len(os.fsencode(path.name))} bytes, more than the "
                          f"{name_max} a file name may have")
    try:  # the real test: make the folder and a file in it (os.access says yes to root even in /proc)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {path.parent} is not a writable folder "
                          f"({exc.strerror or exc})") from None


def _name_max(folder: Path) -> int | None:
    """The longest file name the folder's file system takes (from the nearest folder that exists)."""
    try:
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):  # a folder name too long itself: the folder check that follows says so
        return None


def write_table(table, path: str | Path, fmt: str | None = None) -> Path:
    """Write the table (format from the suffix unless given); ExportError says why it could not."""
    path = Path(path).expanduser()
    text = render(table, fmt or format_for_path(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, text)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def osc52(text: str, tmux_passthrough: bool = False) -> str:
    """The escape sequence that asks the terminal to put text on the clipboard (works over SSH).

    Inside tmux without `set-clipboard on`, the sequence must be wrapped in a DCS passthrough.
    """
    sequence = f"\x1b]52;c;{base64.b64encode(text.encode()).decode()}\a"
    if tmux_passthrough:
        return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence

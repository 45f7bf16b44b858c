"""A report's blocks written out: Markdown (pipe tables, figures as image links), one self-contained HTML file
(figures inlined), or LaTeX tables alone. The blocks say what; these functions only say how it looks."""
from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sysprof.profiler_core.render.export import (
    cell_text,
    latex_escape,
    markdown_text,
    table_records,
    to_latex,
    to_markdown,
)


@dataclass(frozen=True)
class Block:
    kind: str  # "heading", "text", "code", "table" or "figure"
    text: str = ""  # a heading, a paragraph, a code block, a table's or figure's title
    level: int = 2  # a heading's
    records: Sequence[dict[str, Any]] = ()  # a table's rows
    paths: Sequence[Path] = field(default_factory=tuple)  # a figure's files (PNG first, then SVG)


def heading(text: str, level: int = 2) -> Block:
    return Block("heading", text, level)


def text(paragraph: str) -> Block:
    return Block("text", paragraph)


def code(lines: str) -> Block:
    return Block("code", lines)


def table(title: str, records: Sequence[dict[str, Any]]) -> Block:
    return Block("table", title, records=records)


def figure(title: str, paths: Sequence[Path]) -> Block:
    return Block("figure", title, paths=tuple(paths))


def markdown(blocks: Sequence[Block], document: Path) -> str:
    parts = []
    for block in blocks:
        if block.kind == "heading":
            parts.append(f"{'#' * block.level} {markdown_text(block.text)}")
        elif block.kind == "text":
            parts.append(markdown_text(block.text))
        elif block.kind == "code":
            parts.append(f"```\n{block.text}\n```")
        elif block.kind == "table":
            parts.append(f"**{markdown_text(block.text)}**\n\n{to_markdown(list(block.records)).rstrip()}")
        elif block.kind == "figure":
            png, *others = (_relative(path, document) for path in block.paths)
            links = "".join(f" · [{Path(other).suffix[1:].upper()}]({other})" for other in others)
            parts.append(f"![{markdown_text(block.text)}]({png})\n\n*{markdown_text(block.text)}*{links}")
    return "\n\n".join(parts) + "\n"


def _relative(path: Path, document: Path) -> str:
    """The figure's link, percent-encoded: a name holding <, > or spaces stays one link and never markup."""
    try:
        relative = path.resolve().relative_to(document.resolve().parent).as_posix()
    except ValueError:
        relative = path.resolve().as_posix()
    return quote(relative, safe="/._-")


STYLE = """body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.9rem}th,td{border:1px solid #ccc;padding:.2rem .5rem}
td.n{text-align:right;font-variant-numeric:tabular-nums}pre{background:#f6f6f6;padding:.8rem;overflow-x:auto}
img{max-width:100%}figcaption{font-style:italic;margin-bottom:1.5rem}"""


def html_document(blocks: Sequence[Block], title: str) -> str:
    """One file: styles inline, figures as base64 PNG, so it opens anywhere on its own."""
    body = []
    for block in blocks:
        if block.kind == "heading":
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif block.kind == "text":
            body.append(f"<p>{html.escape(block.text)}</p>")
        elif block.kind == "code":
            body.append(f"<pre>{html.escape(block.text)}</pre>")
        elif block.kind == "table":
            body.append(f"<p><b>{html.escape(block.text)}</b></p>{_html_table(block.records)}")
        elif block.kind == "figure":
            png = base64.b64encode(Path(block.paths[0]).read_bytes()).decode()
            body.append(f'<figure><img alt="{html.escape(block.text)}" src="data:image/png;base64,{png}">'
                        f"<figcaption>{html.escape(block.text)}</figcaption></figure>")
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _html_table(records: Sequence[dict[str, Any]]) -> str:
    columns, rows = table_records(list(records))
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in columns)
    lines = []
    for row in rows:
        cells = "".join(f"<td{_numeric_class(row.get(column))}>{html.escape(cell_text(row.get(column)))}</td>"
                        for column in columns)
        lines.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def _numeric_class(value) -> str:
    return ' class="n"' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def latex_tables(blocks: Sequence[Block]) -> str:
    """Every table as a LaTeX table float with its title as the caption (the figures and prose left out)."""
    parts = []
    for block in blocks:
        if block.kind == "heading" and block.level <= 2:
            parts.append(f"% {block.text}")
        if block.kind == "table":
            parts.append("\\begin{table}[ht]\n\\centering\n\\caption{" + latex_escape(block.text) + "}\n"
                         + to_latex(list(block.records)) + "\\end{table}")
    return "\n\n".join(parts) + "\n"

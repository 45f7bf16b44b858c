"""Names that are not ours reach the Markdown report as text, never as live HTML: a run folder named like a tag,
rendered by any Markdown viewer, must not run or load anything. The real H200 fixture run, copied under such a name."""
from __future__ import annotations

import shutil
from pathlib import Path

from sysprof.profiler_core.cli import main as cli

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"
HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def test_a_run_folder_named_like_html_is_text_in_the_markdown_report(tmp_path, capsys):
    run = tmp_path / HOSTILE.replace("/", "∕")  # a folder name cannot hold a slash
    shutil.copytree(FIXTURE, run)
    target = tmp_path / "report.md"
    assert cli.main(["report", str(run), "-o", str(target)]) == 0, capsys.readouterr().err
    text = target.read_text()
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "<img" not in text and "<script" not in text

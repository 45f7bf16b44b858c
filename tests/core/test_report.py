"""`sysprof report`: one document from saved run and study directories (real data: the H200 kernel and memory
analyses, a two-rank CPU run, the H200 attention study with an OOM cell, the H200 warm-up study), its tables
checked against the directories' own tables and every figure it links checked on disk."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sysprof.profiler_core.cli.export import directory_tables
from sysprof.profiler_core.cli.report_sections import readable
from sysprof.profiler_core.render.export import to_latex, to_markdown

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ANALYSED, TWO_RANKS = DATA / "runs" / "small-h200-analyses", DATA / "rank_runs" / "tiny-2ranks"
ATTENTION_OOM, WARMUP = DATA / "studies" / "attention-oom-h200", DATA / "studies" / "warmup-small-h200"
SOURCES = (ANALYSED, TWO_RANKS, ATTENTION_OOM, WARMUP)
LINK = re.compile(r"\]\(([^)]+)\)")


def report(*args, cwd: Path):
    return subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "report", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def markdown_report(tmp_path_factory):
    where = tmp_path_factory.mktemp("report")
    done = report(*SOURCES, "-o", where / "report.md", cwd=where)
    assert done.returncode == 0, done.stderr
    return where / "report.md", done.stderr


@pytest.mark.slow  # over 5 s on a 2-core machine: not for the fast tier
def test_every_table_of_every_directory_is_in_the_report_as_export_writes_it(markdown_report):
    path, _ = markdown_report
    text = path.read_text()
    for source in SOURCES:
        for name, records in directory_tables(source).items():
            if name in ("steps", "kernels", "attention kernels") or not records:
                continue  # steps: one export away (said so); kernels: the largest per phase, checked below
            assert f"**{name}**\n\n{to_markdown(readable(records)).rstrip()}" in text, name
    assert "| eager | fp32 | 64 | 65536 | oom |" in text  # the OOM cell is a row, not a gap
    assert "| 64 | 65536 | OOM |" in text  # and the pivot marks it
    assert "**ranks**" in text and "| 1 |" in text.split("**ranks**")[1]
    assert "Not shown: steps" in text


@pytest.mark.slow  # the shared report takes over 5 s to write on a 2-core machine
def test_kernel_tables_keep_the_largest_per_phase_with_base_names(markdown_report):
    text = markdown_report[0].read_text()
    kernels = directory_tables(ANALYSED)["kernels"]
    section = text.split("**kernels (the 10 largest per phase, base names)**")[1].split("All 64 rows")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| phase")]
    per_phase = [sum(k["phase"] == phase for k in kernels) for phase in {k["phase"] for k in kernels}]
    assert len(rows) == sum(min(10, count) for count in per_phase) < len(kernels)
    first = kernels[0]
    assert rows[0].startswith(f"| {first['phase']} | ") and f"| {first['total_ns']} |" in rows[0]


@pytest.mark.slow  # the shared report takes over 5 s to write on a 2-core machine
def test_every_figure_it_links_exists_as_png_and_svg(markdown_report):
    path, stderr = markdown_report
    links = LINK.findall(path.read_text())
    images = [link for link in links if link.endswith((".png", ".svg"))]
    assert images and all((path.parent / link).is_file() for link in images)
    pngs = {Path(link).stem for link in images if link.endswith(".png")}
    assert pngs == {Path(link).stem for link in images if link.endswith(".svg")}
    expected = {"small-h200-analyses-phases", "small-h200-analyses-kernel-classes",
                "small-h200-analyses-memory-timeline", "attention-oom-h200-0-attention", "warmup-small-h200-0-warm-up",
                "tiny-2ranks-phases", "runs-phases"}
    assert expected <= pngs
    assert f"{len(pngs)} figures" in stderr


@pytest.mark.slow  # the shared report takes over 5 s to write on a 2-core machine
def test_what_ran_names_the_machine_and_the_command_to_run_it_again(markdown_report):
    text = markdown_report[0].read_text()
    warmup = text.split("## warmup study warmup-small-h200")[1]
    assert "| device name | NVIDIA H200 |" in warmup and "| driver | 580.159.04 |" in warmup
    assert "| torch | 2.11.0+cu130 |" in warmup
    two = text.split("## Run tiny-2ranks")[1]
    typed = json.loads((TWO_RANKS / "manifest.json").read_text())["command"]
    assert "--nproc 2" in typed and f"```\n{typed}\n```" in two
    assert "2 ranks · ddp" in two  # the headline as the CLI prints it


@pytest.mark.slow  # the shared report takes over 5 s to write on a 2-core machine
def test_runs_of_different_steps_are_not_compared_and_the_report_says_how_to(markdown_report):
    text = markdown_report[0].read_text()
    comparison = text.split("## Comparison")[1]
    assert "B = tiny-2ranks against A = small-h200-analyses: not compared, the runs measure different steps" \
        in comparison and "--force" in comparison


@pytest.mark.slow  # over 5 s on a 2-core machine: not for the fast tier
def test_html_is_one_file_with_its_figures_inside(tmp_path):
    done = report(ANALYSED, ATTENTION_OOM, "-o", tmp_path / "report.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report.html").read_text()
    sources = re.findall(r'src="([^"]+)"', page)
    assert sources and all(source.startswith("data:image/png;base64,") for source in sources)
    assert page.count("<table>") == sum(bool(rows) for source in (ANALYSED, ATTENTION_OOM)
                                        for name, rows in directory_tables(source).items() if name != "steps") + 2
    assert "<td class=\"n\">35.54</td>" in page  # eager fp32 d=64 T=16384 forward, as the study measured it
    assert not list(tmp_path.glob("*_figures"))  # one file: its figures are inside it
    upper = report(ATTENTION_OOM, "-o", tmp_path / "REPORT.HTML", cwd=tmp_path)
    assert upper.returncode == 0 and (tmp_path / "REPORT.HTML").read_text().startswith("<!doctype html>")


def test_latex_tables_only(tmp_path):
    done = report(ATTENTION_OOM, "--tables-only", tmp_path / "tables.tex", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    tex = (tmp_path / "tables.tex").read_text()
    tables = directory_tables(ATTENTION_OOM)
    assert tex.count("\\begin{tabular}") == len(tables) + 1  # and the "what ran" table
    assert to_latex(readable(next(iter(tables.values())))) in tex
    assert "×" not in tex and "ᵀ" not in tex  # pdflatex takes it without a Unicode package
    assert not list(tmp_path.glob("*_figures"))


def test_a_run_without_a_summary_is_reported_as_what_it_wrote(tmp_path):
    unfinished = tmp_path / "unfinished"
    shutil.copytree(DATA / "runs" / "tiny-ctx32", unfinished)
    (unfinished / "summary.json").unlink()
    done = report(unfinished, "-o", tmp_path / "report.md", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "report.md").read_text()
    assert "No summary: the run is incomplete" in text and "| model | tiny |" in text
    assert "As `sysprof run` printed it" not in text


@pytest.mark.parametrize(("args", "message"), [
    (["nowhere"], "nowhere: no such directory"),
    ([DATA / "runs"], "is neither a run directory"),
    ([ANALYSED, "-o", "report.pdf"], "report.pdf: end the name in .md or .html"),
    ([ANALYSED, "--tables-only", "tables.md"], "tables.md: end the name in .tex"),
    ([ANALYSED, "-o", "/proc/report.md"], "cannot write /proc/report.md"),
    ([ANALYSED, "--tables-only", "/proc/tables.tex"], "cannot write /proc/tables.tex"),
    ([ANALYSED, "-o", "r.md", "--tables-only", "t.tex"], "-o and --tables-only each name the one file"),
])
def test_bad_input_is_one_line(args, message, tmp_path):
    done = report(*args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.slow
def test_two_runs_of_the_same_step_are_compared_as_compare_states_it(tmp_path):
    common = ["run", "--model", "tiny", "--device", "cpu", "--ctx", "16", "--batch", "2", "--warmup", "1",
              "--steps", "3", "--runs-dir", tmp_path / "runs", "--json"]
    for attention in ("naive", "sdpa"):
        done = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", *map(str, common), "--attention",
                               attention], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    naive, sdpa = sorted((tmp_path / "runs").iterdir(), key=lambda p: "sdpa" in p.name)
    done = report(naive, sdpa, "-o", tmp_path / "report.md", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    comparison = (tmp_path / "report.md").read_text().split("## Comparison")[1]
    compared = subprocess.run([sys.executable, "-m", "sysprof.profiler_core", "compare", str(naive), str(sdpa)],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    matched = 0
    for line in compared.stdout.splitlines():
        if line.startswith(("forward ", "step ", "tokens/s ")):
            phase, *cells = line.split("  ")
            verdict = [cell.strip() for cell in cells if cell.strip()][4]
            row = next(r for r in comparison.splitlines() if r.startswith(f"| {phase.strip()} |"))
            assert f"| {verdict} |" in row, (line, row)
            matched += 1
    assert matched == 3
    assert "A and B differ in attention naive ≠ sdpa" in comparison  # the notes compare prints, said alike


def test_a_study_records_the_command_a_user_would_type_again(monkeypatch):
    from sysprof.profiler_core.base.rundir import typed_command

    app_started = ["-m", "study", "warmup", "--models", "small", "--runs-dir", "/somewhere/runs", "--events"]
    monkeypatch.setattr(sys, "argv", app_started)
    assert typed_command() == "sysprof study warmup --models small"  # the app's own options left out
    typed = ["-m", "sweep", "--model", "tiny", "--runs-dir", "my runs"]
    monkeypatch.setattr(sys, "argv", typed)
    assert typed_command() == "sysprof sweep --model tiny --runs-dir 'my runs'"  # a user's own stays, quoted


def test_two_app_reports_in_one_second_get_two_files(tmp_path, monkeypatch):
    import time

    from sysprof.profiler_core.api import control

    monkeypatch.setattr(time, "strftime", lambda _format: "20261126-120000")  # both within the same second
    first = control.report_target(tmp_path)
    first.parent.mkdir(parents=True)
    first.write_text("")
    second = control.report_target(tmp_path)
    assert second != first and second.name.endswith("-2-report.md") and second.parent == first.parent


EXAMPLES = ROOT / "benchmarks" / "reports"
H100 = "tests/data/benchmarks/reports/data/h100_2026-11-26"
EXAMPLE_SOURCES = {
    "h100_profiled_run.md": [f"{H100}/20261126-230217-small-ctx256-b4-train-bf16-sdpa"],
    "h100_attention_study.md": [f"{H100}/20261126-230302-attention"],
    "h100_precision_study.md": [f"{H100}/20261126-230552-sweep-precision"],
    "saved_h200_report.md": ["tests/data/runs/small-h200-analyses", "tests/data/studies/attention-h200",
                             "tests/data/studies/warmup-small-h200"],
}


@pytest.mark.slow  # over 5 s on a 2-core machine: not for the fast tier
@pytest.mark.parametrize("name", sorted(EXAMPLE_SOURCES))
def test_the_example_reports_are_what_report_writes_today(name, tmp_path):
    """docs/runs-and-analysis.md links these as what `sysprof report` writes: a change to the report shows here,
    and the examples are regenerated with it (benchmarks/reports/README.md), never left to drift."""
    done = report(*EXAMPLE_SOURCES[name], "-o", tmp_path / name, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    made, kept = ((path / name).read_text().splitlines() for path in (tmp_path, EXAMPLES))
    assert len(made) == len(kept)
    assert [line for line in made if not line.startswith("Made by")] == \
        [line for line in kept if not line.startswith("Made by")]

"""The report key (w): on Runs the marked runs and studies (else the row under the cursor), on Studies the study
shown, written by `sysprof report` in its own process under the runs directory's reports/."""
import re
import shutil
from pathlib import Path

import pytest
from tui_helpers import settle, wait_until

from sysprof.tui.app import build_app

pytestmark = pytest.mark.slow  # the whole app and a real `sysprof report` process

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def runs_root(tmp_path):
    """Two saved CPU runs and the H200 warm-up study, copied: the report goes under the root's reports/."""
    root = tmp_path / "runs"
    for source in (DATA / "runs" / "tiny-ctx32", DATA / "runs" / "tiny-ctx64", DATA / "studies" / "warmup-small-h200"):
        shutil.copytree(source, root / source.name)
    return root


def messages(app) -> str:
    return "\n".join(str(notification.message) for notification in app._notifications)


def written(root: Path) -> list[Path]:
    return sorted((root / "reports").glob("*-report.md")) if (root / "reports").is_dir() else []


async def test_w_on_runs_reports_the_marked_runs_with_their_figures(runs_root):
    app = build_app(runs_dir=str(runs_root), settings_path=runs_root.parent / "settings.json")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "5")
        table = app.query_one("#runs-table")
        names = [record["name"] for record in table.records]
        runs = [names.index("tiny-ctx32"), names.index("tiny-ctx64")]
        await settle(app, pilot, *["down"] * runs[0], "space", *(["down"] * (runs[1] - runs[0]) if runs[1] > runs[0]
                                                                   else ["up"] * (runs[0] - runs[1])), "space", "w")
        await wait_until(pilot, lambda: "wrote " in messages(app), "the report was not written", 120)
        report = written(runs_root)
        assert len(report) == 1
        text = report[0].read_text()
        assert "## Run tiny-ctx32" in text and "## Run tiny-ctx64" in text and "warmup study" not in text
        assert "## Comparison" in text
        figures = re.findall(r"\]\(([^)]+\.png)\)", text)
        assert figures and all((report[0].parent / figure).is_file() for figure in figures)


async def test_w_on_studies_reports_the_study_shown(runs_root):
    app = build_app(runs_dir=str(runs_root), settings_path=runs_root.parent / "settings.json")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot, "6", "w")  # nothing shown yet: said, nothing written
        await wait_until(pilot, lambda: "Nothing to report on here" in messages(app), "no notice", 30)
        app.query_one("#pane-studies").open_study(runs_root / "warmup-small-h200")
        await wait_until(pilot, lambda: bool(app.query_one("#pane-studies").tables), "the study did not open", 60)
        await settle(app, pilot, "w")
        await wait_until(pilot, lambda: "wrote " in messages(app), "the report was not written", 120)
        text = written(runs_root)[0].read_text()
        assert "## warmup study warmup-small-h200" in text and "warm-up study" in text


async def test_f_on_studies_draws_the_studys_main_figure_in_the_tables_place(runs_root):
    shutil.copytree(DATA / "studies" / "attention-oom-h200", runs_root / "attention-oom-h200")
    app = build_app(runs_dir=str(runs_root), settings_path=runs_root.parent / "settings.json")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot, "6")
        pane = app.query_one("#pane-studies")
        pane.open_study(runs_root / "attention-oom-h200")
        await wait_until(pilot, lambda: bool(pane.tables), "the study did not open", 60)
        await settle(app, pilot)
        assert "f: figure" in str(app.query_one("#study-table-title").render())
        await settle(app, pilot, "f")
        plot, table = app.query_one("#study-plot"), app.query_one("#study-table")
        assert plot.display and not table.display and plot.size.height >= 10  # the table's room, at 80 × 24
        assert pane.figure[1].title == "forward ms" and "back to the table" in str(
            app.query_one("#study-table-title").render())
        await settle(app, pilot, "f")
        assert table.display and not plot.display
        pane.open_study(DATA / "studies" / "advise-tiny-cpu")  # no figure: f says so
        await wait_until(pilot, lambda: pane.figure is None and bool(pane.tables), "the advice did not open", 60)
        await settle(app, pilot, "f")
        assert any("No figure for this study" in str(n.message) for n in app._notifications)
        assert table.display

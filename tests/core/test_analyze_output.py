"""`sysprof analyze` as printed: text that is not ours reaches the terminal as it is. Real kernel
names of the H200 fixture hold `[lambda() (instance 3)]`, which Rich markup would take for a tag and drop; so may a
path, a user's range name or a note that quotes a name. Rendered through a real rich Console, as the CLI does with and
without --full-names (print_analysis's full_names)."""
from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from sysprof.profiler_core.kernels.names import short_kernel_name
from sysprof.profiler_core.readers.analyze import analyze_path
from sysprof.profiler_core.render.analysis_report import print_analysis

LAMBDA = "[lambda() (instance 3)]"
# cuda_gpu_kern_sum.csv of ../shared/fixtures/h200_small_fp32, and in the top 15 of its report.sqlite
COPY_KERNEL = ("void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl_nocast<"
               "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() "
               "const::[lambda() (instance 7)]::operator ()() const::[lambda(float) (instance 1)]>("
               "at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)")
MODULE_RANGES = Path(__file__).resolve().parents[1] / "data" / "module_ranges" / "nsys_kernels_analysis.json"


@pytest.fixture(scope="module")
def analysis(tmp_path_factory, shared_fixtures) -> dict:
    """The real report.sqlite, in a directory whose name is itself a kernel name's bracket."""
    folder = tmp_path_factory.mktemp("nsys") / LAMBDA
    folder.mkdir()
    path = folder / "report.sqlite"
    path.write_bytes(lzma.decompress((shared_fixtures / "h200_small_fp32" / "report.sqlite.xz").read_bytes()))
    return analyze_path(path)


def rendered(analysis: dict, full_names: bool, width: int = 1000) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    print_analysis(console, analysis, full_names)
    return console.export_text()


def kernel_rows(text: str) -> list[str]:
    """The 15 lines under the top-kernels table's header rule."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Top 15 kernels"))
    rule = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("───"))
    return lines[rule + 1:rule + 16]


def test_markup_would_swallow_the_real_name():
    assert Text.from_markup(COPY_KERNEL).plain != COPY_KERNEL  # what escaping guards against


def test_full_names_print_every_real_name_whole_and_unaltered(analysis):
    names = [kernel["name"] for kernel in analysis["kernels"][:15]]
    assert COPY_KERNEL in names
    text = rendered(analysis, full_names=True)
    rows = kernel_rows(text)
    assert len(rows) == 15  # one line each at this width: nothing folded
    for name, row in zip(names, rows):
        assert row.rstrip().endswith(f" {name}")  # the whole name is the last column, so it can wrap
    assert sum(LAMBDA in row for row in rows) == 1


def test_short_names_lose_nothing_but_the_template_and_arguments(analysis):
    text = rendered(analysis, full_names=False, width=200)
    rows = kernel_rows(text)
    for kernel, row in zip(analysis["kernels"][:15], rows):
        short = short_kernel_name(kernel["name"])
        cell = row.split()[0]
        assert cell == short and "…" not in row
    copy_row = rows[[kernel["name"] for kernel in analysis["kernels"][:15]].index(COPY_KERNEL)]
    assert copy_row.startswith(" elementwise_kernel ") and " copy " in copy_row
    assert "lambda" not in "\n".join(rows)


def test_the_path_in_the_title_and_notes_quoting_names_are_printed_as_they_are(analysis):
    noted = analysis | {"notes": [*analysis["notes"], f"slowest copy: {COPY_KERNEL} [bold]as named[/bold]"]}
    text = rendered(noted, full_names=False)
    title = " ".join(line.strip() for line in text.splitlines()[:3])  # a title wraps at its table's width
    assert f"/{LAMBDA}/report.sqlite)" in title
    assert f"note: slowest copy: {COPY_KERNEL} [bold]as named[/bold]" in text


def test_the_top_classes_numbers_carry_their_unit(analysis):
    text = rendered(analysis, full_names=False, width=200)
    forward = analysis["phases"]["forward"]
    shares = sorted(forward["by_class"].items(), key=lambda item: -item[1])[:2]
    cell = " ".join(f"{name} {ns / forward['gpu_ns']:.0%}" for name, ns in shares)
    assert "top classes (% of phase)" in text and cell in text and cell.startswith("gemm ")


def test_user_range_names_in_the_module_table_are_printed_as_they_are():
    analysis = json.loads(MODULE_RANGES.read_text())
    name = f"up projection {LAMBDA} and [b]gelu[/b]"
    rows = analysis["modules"]["rows"]
    renamed = [row | {"sub_range": name} if row.get("sub_range") == "up projection and gelu" else row for row in rows]
    assert renamed != rows
    text = rendered(analysis | {"modules": analysis["modules"] | {"rows": renamed}}, full_names=False)
    assert f"└ {name}" in text

"""`sysprof inspect` as text, and the same numbers for the Configure screen (torch-free)."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from sysprof.models.presets import human_count
from sysprof.profiler_core.base.records import InspectReport
from sysprof.profiler_core.base.units import format_bytes

MEMORY_ITEMS = (("weights", "weights_bytes"), ("gradients", "gradients_bytes"),
                ("optimizer state", "optimizer_state_bytes"), ("activations (saved for backward)", "activations_bytes"))


def flops_text(value: int | None) -> str:
    if value is None:
        return "—"
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if value >= scale:
            return f"{value / scale:,.3f} {unit}"
    return f"{value:,} FLOP"


def params_line(report: InspectReport) -> str:
    params = report["params"]
    return (f"{report['model']} ({report['model_class']}): {params['total']:,} parameters "
            f"({human_count(params['total'])}); trainable {params['trainable']:,}; embedding {params['embedding']:,}; "
            f"non-embedding {params['non_embedding']:,}")


def flops_lines(report: InspectReport) -> list[str]:
    flops = report["flops"]
    if flops is None:
        return ["FLOPs: not counted (see notes); MFU will be N/A"]
    lines = [f"FLOPs per step (FlopCounterMode): forward {flops_text(flops['forward'])}, backward "
             f"{flops_text(flops['backward'])}, step {flops_text(flops['step'])} (optimizer not counted)"]
    closed, step = report["closed_form_flops"], flops["step"]
    if closed is not None and step is not None:
        verdict = "equal" if closed == step else f"differ by {step - closed:+,}"
        lines.append(f"closed form (built-in model): {flops_text(closed)}: counted and closed form {verdict}")
    return lines


def memory_rows(report: InspectReport) -> list[tuple[str, str]]:
    memory = report["memory"]
    rows = [(label, format_bytes(memory[key])) for label, key in MEMORY_ITEMS if key in memory]
    rows.append(("total ≥", format_bytes(sum(memory.values()))))
    residual = report.get("residual_stream_per_layer_bytes")
    return rows + ([("residual stream per layer (B·T·d)", format_bytes(residual))] if residual is not None else [])


def memory_table(report: InspectReport) -> Table:
    table = Table(title="memory of one step, counted on the meta device", title_justify="left", show_header=False,
                  box=None)
    table.add_column("item")
    table.add_column("bytes", justify="right")
    for label, value in memory_rows(report):
        table.add_row(label, value)
    return table


def modules_table(report: InspectReport) -> Table:
    table = Table(title="modules (repeated blocks folded: *)", title_justify="left")
    for name, justify in (("module", "left"), ("type", "left"), ("×", "right"), ("params", "right"),
                          ("share", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # rich's JustifyMethod literal
    for row in report["modules"]:
        indent = "  " * (row["depth"] - 1)
        table.add_row(f"{indent}{row['name']}", row["type"], str(row["count"]), f"{row['params']:,}",
                      f"{row['share']:.1%}")
    return table


def print_inspect(console: Console, report: InspectReport) -> None:
    console.print(params_line(report))
    for line in flops_lines(report):
        console.print(line)
    console.print(memory_table(report))
    console.print(modules_table(report))
    for note in report["notes"]:
        console.print(f"[yellow]note:[/] {note}")
    console.print(f"[dim]built on the meta device in {report['seconds']:.2f} s[/]")

"""Widgets that render RunState; they never talk to the runner."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Button, Checkbox, DataTable, Input, Label, Select, Static

from models.presets import PRESETS, count_params, human_count
from profiler_core.config import ATTENTIONS, DEVICES, DTYPES, MODES, RunConfig
from profiler_core.report import format_ms
from tui.state import RunState

STEP_COLUMNS = ("step", "wall", "forward", "backward", "optimizer")


class StepTable(DataTable):
    """Warm-up and measured steps as they arrive."""

    run_state: reactive[RunState] = reactive(RunState, always_update=True)

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns(*STEP_COLUMNS)

    def watch_run_state(self, state: RunState) -> None:
        rows = [("warm-up", s) for s in state.warmup_steps] + [("step", s) for s in state.steps]
        if len(rows) < self.row_count:
            self.clear()
        for label, step in rows[self.row_count:]:
            phases = step.get("phases_ms", {})
            self.add_row(f"{label} {step['index']}", format_ms(step["wall_ms"]),
                         *(format_ms(phases.get(p)) if p in phases else "—" for p in STEP_COLUMNS[2:]))


class RunStatus(Static):
    run_state: reactive[RunState] = reactive(RunState, always_update=True)

    def watch_run_state(self, state: RunState) -> None:
        self.set_class(state.stage == "failed", "-failed")
        self.update(status_text(state))


def status_text(state: RunState) -> str:
    if state.stage == "idle":
        return "Ready: pick a configuration and press r to run."
    if state.error:
        return f"{state.error['kind']} in {state.error.get('phase') or 'run'}: {state.error['message']}"
    if state.summary and state.stage == "finished":
        step = state.summary["phases"].get("step", {})
        tps = state.summary.get("tokens_per_s")
        return (f"finished · median step {format_ms(step.get('median_ms'))} · "
                f"{tps:,.0f} tokens/s · {state.summary['run_dir']}" if tps else "finished")
    device = (state.env or {}).get("device_name", "…")
    return f"{state.stage} · {len(state.steps)}/{state.planned_steps or '?'} measured steps · {device}"


def preset_options() -> list[tuple[str, str]]:
    return [(f"{name} ({human_count(count_params(spec))})", name) for name, spec in PRESETS.items()]


class ConfigForm(Vertical):
    """The fields of a RunConfig; reads back a RunConfig or the reason it cannot be built."""

    def __init__(self, initial: RunConfig, **kwargs):
        super().__init__(**kwargs)
        self.initial = initial

    def compose(self) -> ComposeResult:
        cfg = self.initial
        yield Label("Model")
        yield Select(preset_options(), value=cfg.model, allow_blank=False, id="model")
        for name in ("ctx", "batch", "warmup", "steps"):
            yield Label(name)
            yield Input(str(getattr(cfg, name)), id=name, type="integer")
        for name, choices in (("mode", MODES), ("dtype", DTYPES), ("attention", ATTENTIONS), ("device", DEVICES)):
            yield Label(name)
            yield Select([(c, c) for c in choices], value=getattr(cfg, name), allow_blank=False, id=name)
        yield Checkbox("torch.compile", cfg.compile, id="compile")
        yield Label("", id="config-error")
        yield Button("Run (r)", id="run", variant="primary")

    def values(self) -> dict:
        values: dict = {"compile": self.query_one("#compile", Checkbox).value}
        for select in self.query(Select):
            values[select.id] = select.value
        for field in self.query(Input):
            values[field.id] = int(field.value) if field.value.strip().lstrip("-").isdigit() else field.value
        return values

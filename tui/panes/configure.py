"""Configure: every RunConfig field, the true parameter count, predicted memory, and why Run is disabled; the
user's own model and optimizer as specs (config_fields), with a file picker for the factory."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from sysprof.profiler_core.api import RunConfig, configs, gpus, vocab
from sysprof.tui.keys import pane_bindings
from sysprof.tui.panes.base import Pane
from sysprof.tui.panes.config_fields import (
    CODE_FIELDS,
    FACTORY_FIELDS,
    code_rows,
    read_integer,
    shown,
)
from sysprof.tui.panes.configure_form import (
    ab_from_form,
    advise_from_form,
    budget_minutes,
    checked_config,
    code_stamp,
    form_texts,
    form_values,
    inspected_part,
    runs_user_code,
)
from sysprof.tui.panes.inspect_panel import InspectPanel
from sysprof.tui.widgets.factory_picker import FactoryPicker

CHOICES = {"mode": vocab.MODES, "dtype": vocab.DTYPES, "matmul_precision": vocab.MATMUL_PRECISIONS,
           "attention": vocab.ATTENTIONS, "device": vocab.DEVICES, "profiler": vocab.PROFILERS,
           "optimizer_impl": vocab.OPTIMIZER_IMPLS, "compile_mode": vocab.COMPILE_MODES, "parallel": vocab.PARALLELS}
INTEGERS = ("ctx", "batch", "warmup", "steps", "repeats", "nproc")
CHECKBOXES = {"compile": "torch.compile", "memory": "memory capture (CUDA)",
              "activation_checkpointing": "recompute blocks"}
LABELS = {"activation_checkpointing": "checkpointing"}  # a field name too wide for the form's label column


RECHECK_S = 1.0
META = re.compile(r"\bmeta\b", re.IGNORECASE)


class ConfigurePane(Pane):
    BINDINGS = pane_bindings("Configure")

    class Interleave(Message):
        """Run the form's config (A) against it with B's options, interleaved (`sysprof ab`), on Studies."""

        def __init__(self, command: str):
            super().__init__()
            self.command = command

    class Advise(Message):
        """Ask the advisor about the form's config (`sysprof advise`), on Studies."""

        def __init__(self, command: str):
            super().__init__()
            self.command = command

    class Changed(Message):
        """The form changed: the config it builds (None when it cannot) and every problem by field."""

        def __init__(self, config: RunConfig | None, problems: dict[str, str]):
            super().__init__()
            self.config, self.problems = config, problems

    def __init__(self, initial: RunConfig, runs_root: Path, live_inspect: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.initial, self.runs_root, self.live_inspect = initial, runs_root, live_inspect
        self.has_problems = False
        self.checked: RunConfig | None = None  # the last config the form built without problems
        self.visible_gpus = gpus.visible_gpu_count()  # once: --nproc is capped at what this node shows
        self.device_memory = {device: configs.device_memory(device) for device in ("auto", "cuda", "cpu")}  # once too
        self.was_running = False
        self.inspected: tuple[RunConfig, str | None] | None = None  # the last inspection's config and problem
        self.inspected_stamp: tuple[float, ...] = ()  # the user code's files as they were when inspected

    def compose(self) -> ComposeResult:
        cfg = self.initial
        with Horizontal():
            with VerticalScroll(id="config-scroll"):
                with Grid(id="config-form"):
                    yield from self.field_rows(cfg)
            with VerticalScroll(id="config-side"):
                yield Static(id="model-info")  # the model as the form knows it
                yield Static(id="predicted-memory")
                yield Static(id="config-error")
                yield Button("Run (ctrl+r)", id="run", variant="primary", compact=True)
                yield Label("A/B: the form is A; B changes", id="ab-label")
                yield Input(placeholder="--optimizer-impl fused", id="ab-options", compact=True)
                yield Button("Run A/B interleaved (ctrl+t)", id="ab", compact=True)
                yield Label("Advise: what makes it faster", id="advise-label")
                yield Input(placeholder="budget in minutes (20)", id="advise-budget", compact=True)
                yield Button("Advise (ctrl+y)", id="advise", compact=True)
                yield InspectPanel(self.runs_root, id="inspect-panel").set_class(not self.live_inspect, "-off")

    def field_rows(self, cfg: RunConfig) -> ComposeResult:
        presets = [(f"{name} ({configs.human_count(configs.count_params(spec))})", name)
                   for name, spec in vocab.PRESETS.items()]
        yield Label("model")
        yield Select(presets + [(vocab.CUSTOM, vocab.CUSTOM)], value=cfg.model, allow_blank=False, id="model",
                     compact=True)
        yield from code_rows(cfg, FACTORY_FIELDS)
        base = vocab.PRESETS.get(cfg.model, vocab.PRESETS["small"])
        for name in (*vocab.DIM_FIELDS, *INTEGERS):
            value = getattr(cfg, name)
            yield Label(name)
            yield Input("" if value is None else str(value), id=name, compact=True,
                        placeholder=str(getattr(base, name, "")) if name in vocab.DIM_FIELDS else "")
        for name, choices in CHOICES.items():
            yield Label(name)
            yield Select([(c, c) for c in choices], value=getattr(cfg, name), allow_blank=False, id=name,
                         compact=True)
        for name, label in CHECKBOXES.items():
            yield Label(LABELS.get(name, name))
            yield Checkbox(label, getattr(cfg, name), id=name, compact=True)
        yield from code_rows(cfg, CODE_FIELDS)

    def values(self) -> dict:
        chosen: dict = {name: self.query_one(f"#{name}", Checkbox).value for name in CHECKBOXES}
        chosen.update({select.id: select.value for select in self.query(Select)})
        return form_values({str(field.id): field.value for field in self.query("#config-form Input").results(Input)},
                           chosen)

    def on_mount(self) -> None:
        self.check()
        if self.live_inspect:
            self.set_interval(RECHECK_S, self.recheck_code)

    @on(Input.Changed, "#config-form Input")
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def check(self) -> None:
        cfg, problems = checked_config(self.values(), self.visible_gpus, self.device_memory)
        for field in self.query("#config-form Input, #config-form Select"):
            field.set_class(field.id in problems, "-invalid")
            field.tooltip = problems.get(field.id) if field.id is not None else None
        model, predicted = form_texts(cfg, problems)
        self.query_one("#model-info", Static).update(model)
        self.query_one("#predicted-memory", Static).update(predicted)
        self.checked = cfg if not problems else None
        self.inspect_form()
        wait = self.inspection_wait()
        blocked = problems or ({"inspection": wait} if wait else {})
        self.query_one("#config-error", Static).update("\n".join(f"{k}: {v}" for k, v in blocked.items()))
        self.update_run_button(blocked)
        self.post_message(self.Changed(None if blocked else self.checked, blocked))

    def inspection_wait(self) -> str | None:
        """Why Run waits: a config with the user's own code runs only once the inspector built its model (an
        import error or a factory that raises then stops Run here, not after a run directory was made)."""
        cfg = self.checked
        if not (self.live_inspect and cfg is not None and runs_user_code(cfg)):
            return None
        if self.inspected is None or self.inspected[0] != inspected_part(cfg):
            return "Run waits for the model's inspection (your code, imported in a process of its own)"
        problem = self.inspected[1]
        # the meta device is the inspector's own limit (a factory that moves itself .to("cpu")): the run may work
        return None if problem is None or META.search(problem) else problem

    def recheck_code(self) -> None:
        """While a failed inspection holds Run, a fix saved to the user's file inspects again (a stat a second)."""
        if self.inspected is None or self.inspected[1] is None or self.checked is None:
            return
        stamp = code_stamp(self.checked)
        if stamp != self.inspected_stamp:
            self.inspected_stamp = stamp
            self.query_one(InspectPanel).request(inspected_part(self.checked), again=True)

    def show_config(self, cfg: RunConfig) -> None:
        """Fill the form with cfg (the advisor's answer), keeping the form's repeats: the answer is about the step,
        not about how many processes measure it. Each change is checked as typing is."""
        repeats = read_integer(self.query_one("#repeats", Input).value)
        cfg = replace(cfg, repeats=repeats if isinstance(repeats, int) and repeats > 0 else cfg.repeats)
        for field in self.query("#config-form Input").results(Input):
            name = str(field.id)
            value = getattr(cfg, name)
            field.value = shown(cfg, name) if name in FACTORY_FIELDS + CODE_FIELDS else (
                "" if value is None else str(value))
        for select in self.query("#config-form Select").results(Select):
            select.value = getattr(cfg, str(select.id))
        for name in CHECKBOXES:
            self.query_one(f"#{name}", Checkbox).value = getattr(cfg, name)

    @on(InspectPanel.Inspected)
    def inspection_ended(self, message: InspectPanel.Inspected) -> None:
        self.inspected = (message.config, message.problem)
        self.inspected_stamp = code_stamp(message.config)
        self.check()

    def inspect_form(self) -> None:
        """The model as the runner will build it, counted on the meta device in an inspector process."""
        if not self.live_inspect:
            return
        panel = self.query_one(InspectPanel)
        if self.run_state.running:  # an inspector would take CPU from the steps being measured
            panel.hold("inspect waits until the run finishes")
        else:
            panel.request(None if self.checked is None else inspected_part(self.checked))

    def update_run_button(self, problems: dict | None = None) -> None:
        if problems is not None:
            self.has_problems = bool(problems)
        self.query_one("#run", Button).disabled = self.has_problems or self.run_state.running

    def watch_run_state(self) -> None:
        self.update_run_button()
        if self.run_state.running != self.was_running:  # every step updates run_state: act on changes only
            self.was_running = self.run_state.running
            self.inspect_form()

    @on(Input.Submitted, "#config-form Input")
    def field_done(self) -> None:
        """Enter ends the edit: the field lets go, so the digit pressed next switches screens, not edits it."""
        self.screen.set_focus(None)

    @on(Button.Pressed, "#ab")
    @on(Input.Submitted, "#ab-options")
    def action_ab(self) -> None:
        b_options = self.query_one("#ab-options", Input).value
        if self.checked is None or self.has_problems:  # the run gate holds A as it holds Run
            self.notify("Fix the configuration first: it is A (see why under the form).", severity="warning")
        elif not b_options.strip():
            self.notify("Type B's options first (e.g. --optimizer-impl fused).", severity="warning")
            self.query_one("#ab-options", Input).focus()
        else:
            self.post_message(self.Interleave(ab_from_form(self.checked, b_options)))

    @on(Button.Pressed, "#advise")
    @on(Input.Submitted, "#advise-budget")
    def action_advise(self) -> None:
        field = self.query_one("#advise-budget", Input)
        try:
            budget = budget_minutes(field.value)
        except ValueError:
            self.notify(f"The budget is minutes, a positive number; got {field.value!r}.", severity="warning")
            field.focus()
            return
        if self.checked is None or self.has_problems:  # the run gate holds the advisor's baseline as it holds Run
            self.notify("Fix the configuration first: the advisor starts from it (see why under the form).",
                        severity="warning")
        else:
            self.post_message(self.Advise(advise_from_form(self.checked, budget)))

    @on(Button.Pressed, "#pick-factory")
    def action_pick_factory(self) -> None:
        self.app.push_screen(FactoryPicker(Path.cwd()), self.factory_picked)

    def factory_picked(self, spec: str | None) -> None:
        if spec:
            self.query_one("#model_factory", Input).value = spec  # Input.Changed checks the form again
            self.query_one("#model_args", Input).focus()

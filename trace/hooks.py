"""Steps found in a loop with no line of ours in it (`sysprof trace -- python train.py`): hooks on what every
PyTorch loop calls drive the same tracker the API does.

- data: the DataLoader iterator's __next__ (the time the loop waits for its next batch);
- forward: the outermost module call, by torch's global module hooks ("eval" where gradients are off);
- backward: torch.autograd.backward (loss.backward() goes through it);
- optimizer: torch's global optimizer-step hooks. A step ends when the optimizer has stepped and the loop moves on
  to its next batch or forward: several optimizers (or a GradScaler) stepping in a row are one optimizer phase.

A phase that starts inside another (a forward recomputed inside backward) is part of the outer one. Hooks that
cannot be installed (an older torch) leave that phase unfound, and the run says which were found."""
from __future__ import annotations

import sys
from typing import Any

PHASES = ("data", "forward", "backward", "optimizer")


class AutoSteps:
    def __init__(self, tracker: Any, torch: Any):
        self.tracker, self.torch = tracker, torch
        self.step: Any = None  # the open step's context, entered by hand
        self.phase: Any = None
        self.phase_name: str | None = None
        self.optimizer_done = False  # the optimizer has stepped: the step ends when the loop moves on
        self.depth = 0  # module calls under way (the outermost one is the forward)
        self.opened_forward = False
        self.found: dict[str, bool] = dict.fromkeys([*PHASES, "eval"], False)
        self.said = False  # the end said (at exit, or before the exception that ends the script)
        self.handles: list[Any] = []  # torch's hook handles, and the functions wrapped: what remove() undoes
        self.restore: list[tuple[Any, str, Any]] = []

    def open_phase(self, name: str) -> bool:
        if self.phase is not None:
            return False
        if self.optimizer_done and name != "optimizer":
            self.close_step()
        if self.step is None:
            self.step = self.tracker.step()
            self.step.__enter__()
        self.found[name] = True
        self.phase, self.phase_name = self.tracker.phase(name), name
        self.phase.__enter__()
        return True

    def close_phase(self) -> None:
        phase, self.phase, self.phase_name = self.phase, None, None
        if phase is not None:
            phase.__exit__(None, None, None)

    def close_step(self) -> None:
        self.close_phase()
        step, self.step, self.optimizer_done = self.step, None, False
        if step is not None:
            step.__exit__(None, None, None)

    def timed(self, name: str, call: Any) -> Any:
        """call, wrapped: its time is phase name (unless a phase is under way already)."""
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            opened = self.open_phase(name)
            try:
                return call(*args, **kwargs)
            finally:
                if opened:
                    self.close_phase()
        return wrapper

    def forward_starts(self, module: Any, args: Any) -> None:
        if self.compiling():
            return
        if self.depth == 0:
            self.opened_forward = self.open_phase("forward" if self.torch.is_grad_enabled() else "eval")
        self.depth += 1

    def forward_ends(self, module: Any, args: Any, output: Any) -> None:
        if self.compiling():
            return
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and self.opened_forward:
            self.opened_forward = False
            self.close_phase()

    def optimizer_starts(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self.compiling():
            self.open_phase("optimizer")  # a second optimizer's step adds to the first's phase

    def optimizer_ends(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self.compiling() and self.phase_name == "optimizer":
            self.close_phase()
            self.optimizer_done = True

    def compiling(self) -> bool:
        """Inside torch.compile's tracing the hooks do nothing: constant there, so they add no graph break."""
        return bool(self.torch.compiler.is_compiling())

    def finding(self) -> dict[str, str]:
        """What the run rests on: which phases the hooks found, and which not."""
        found = [name for name, seen in self.found.items() if seen]
        missing = [name for name in PHASES if not self.found[name]]
        text = f"found without code changes: {', '.join(found) or 'nothing'}" + (
            f"; not found: {', '.join(missing)}" if missing else "")
        return {"kind": "steps found", "text": text,
                "rests_on": "hooks on the DataLoader iterator, the outermost module call, torch.autograd.backward "
                            "and torch's optimizer-step hooks"}


def install(tracker: Any) -> AutoSteps:
    """The hooks, on this process's torch; the steps they drive end with the process (or at remove())."""
    import torch
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from torch.utils.data import dataloader

    auto = AutoSteps(tracker, torch)
    iterator = dataloader._BaseDataLoaderIter
    auto.restore = [(iterator, "__next__", iterator.__next__), (torch.autograd, "backward", torch.autograd.backward)]
    iterator.__next__ = auto.timed("data", iterator.__next__)  # type: ignore[method-assign]
    torch.autograd.backward = auto.timed("backward", torch.autograd.backward)
    auto.handles = [register_module_forward_pre_hook(auto.forward_starts),
                    register_module_forward_hook(auto.forward_ends, always_call=True),
                    register_optimizer_step_pre_hook(auto.optimizer_starts),
                    register_optimizer_step_post_hook(auto.optimizer_ends)]
    return auto


def remove(auto: AutoSteps) -> None:
    """The hooks taken off again, a step whose optimizer ran ended first (the overhead benchmark alternates)."""
    if auto.optimizer_done:
        auto.close_step()
    for handle in auto.handles:
        handle.remove()
    for owner, name, original in auto.restore:
        setattr(owner, name, original)


def say_at_end(auto: AutoSteps) -> None:
    """The last step closed, what was found recorded; when no optimizer step came, no step was timed (one left
    open is not written): say what to add instead."""
    if auto.said or auto.tracker.stopped:
        return
    auto.said = True
    auto.close_phase()
    if auto.optimizer_done:  # a step whose optimizer ran; one begun after the last (an evaluation) is no step
        auto.close_step()
    auto.tracker.run.notes.append(auto.finding())
    if not auto.found["optimizer"]:
        print("sysprof trace: no optimizer step was found, so no step was timed: put `with tracker.step():` around "
              "each step of your loop (from sysprof import trace; tracker = trace.start())", file=sys.stderr)

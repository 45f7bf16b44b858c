"""Kernel-table backends: how to launch a profiled pass, and how to turn its output into labelled kernels.

Each backend is one file; BACKENDS is the registry. `choose_backend` resolves `--profiler`.
"""
from __future__ import annotations

from sysprof.profiler_core.base.errors import BackendUnavailable, KernelReportError
from sysprof.profiler_core.kernels.nsys.locate import find_nsys
from sysprof.profiler_core.session.backends.base import Backend
from sysprof.profiler_core.session.backends.nsys_backend import NsysBackend
from sysprof.profiler_core.session.backends.torch_backend import TorchBackend

BACKENDS = {"nsys": NsysBackend, "torch": TorchBackend}


def choose_backend(requested: str, nsys_path: str | None = None) -> tuple[Backend | None, str | None]:
    """The backend for --profiler (none/nsys/torch/auto) and a notice for the user, if any."""
    if requested == "none":
        return None, None
    if requested == "torch":
        return TorchBackend(), None
    try:
        found = find_nsys(nsys_path)
    except KernelReportError as exc:  # an explicit --nsys or $SYSPROF_NSYS that is not an nsys
        raise BackendUnavailable(str(exc)) from None
    if found is not None:
        return NsysBackend(found), None
    if requested == "nsys":
        raise BackendUnavailable("nsys not found (--nsys, $SYSPROF_NSYS, PATH, /usr/local/cuda*/bin, "
                                 "/opt/nvidia/nsight-*); install Nsight Systems or use --profiler torch")
    return TorchBackend(), "nsys not found: kernel tables come from torch.profiler instead"


__all__ = ["BACKENDS", "Backend", "BackendUnavailable", "choose_backend"]

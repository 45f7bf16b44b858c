"""The kernel package stays importable without torch or textual (a UI-free, GPU-free core)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_kernels_package_imports_neither_torch_nor_textual():
    code = (
        "import sys, sysprof.profiler_core.kernels, sysprof.profiler_core.kernels.nsys.commands, "
        "sysprof.profiler_core.kernels.nsys.locate;"
        "bad = {'torch', 'textual'} & {m.split('.')[0] for m in sys.modules};"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)

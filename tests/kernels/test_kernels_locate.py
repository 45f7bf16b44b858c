"""Finding nsys: search order over a temporary filesystem tree.

The executables here are empty shell scripts that only exist to be found; nothing
runs them as nsys.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sysprof.profiler_core.base.errors import KernelReportError
from sysprof.profiler_core.kernels.nsys.locate import find_nsys, find_qdstrm_importer, nsys_version


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "root"
    _executable(root / "usr/local/cuda-12.4/bin/nsys")
    _executable(root / "opt/nvidia/nsight-systems/2024.5.1/bin/nsys")
    _executable(root / "opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys")
    return root


def test_install_globs_pick_the_newest(tree):
    found = find_nsys(environ={"PATH": ""}, root=tree)
    assert found == tree / "opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"


def test_path_beats_install_locations(tree, tmp_path):
    on_path = _executable(tmp_path / "bin" / "nsys")
    assert find_nsys(environ={"PATH": str(on_path.parent)}, root=tree) == on_path


def test_env_var_beats_path_and_explicit_beats_env(tree, tmp_path):
    from_env = _executable(tmp_path / "env" / "nsys")
    explicit = _executable(tmp_path / "explicit" / "nsys")
    environ = {"PATH": str(tmp_path / "bin"), "SYSPROF_NSYS": str(from_env)}
    assert find_nsys(environ=environ, root=tree) == from_env
    assert find_nsys(explicit, environ=environ, root=tree) == explicit
    assert find_nsys(explicit.parent, environ=environ, root=tree) == explicit  # a folder holding nsys


def test_nothing_found_is_none_and_bad_explicit_path_is_an_error(tmp_path):
    assert find_nsys(environ={"PATH": ""}, root=tmp_path) is None
    with pytest.raises(KernelReportError, match="--nsys"):
        find_nsys(tmp_path / "no-such-nsys", environ={}, root=tmp_path)
    not_executable = tmp_path / "nsys"
    not_executable.write_text("")
    with pytest.raises(KernelReportError, match="SYSPROF_NSYS"):
        find_nsys(environ={"SYSPROF_NSYS": str(not_executable)}, root=tmp_path)


def test_qdstrm_importer_beside_nsys_or_in_host_folder(tmp_path):
    install = tmp_path / "nsight-systems/2024.5.1"
    nsys = _executable(install / "target-linux-x64" / "nsys")
    assert find_qdstrm_importer(nsys) is None
    importer = _executable(install / "host-linux-x64" / "QdstrmImporter")
    assert find_qdstrm_importer(nsys) == importer
    beside = _executable(install / "target-linux-x64" / "QdstrmImporter")
    assert find_qdstrm_importer(nsys) == beside


def test_version_of_something_that_cannot_run_is_none(tmp_path):
    assert nsys_version(tmp_path / "missing-nsys") is None

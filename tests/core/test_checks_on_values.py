"""Values a typo makes: refused up front with the option named, nothing run and no runs folder made. An empty item
between commas, a value given twice, an infinite budget, an empty table name, one directory reported twice."""
from __future__ import annotations

from pathlib import Path

import pytest

from sysprof.profiler_core.cli import main as cli

RUN = Path(__file__).resolve().parents[1] / "data" / "runs" / "small-h200-analyses"


@pytest.mark.parametrize("argv, said", [
    (["sweep", "--model", "tiny", "--device", "cpu", "--ctx", "64,,128"], "--ctx: an empty value between commas"),
    (["sweep", "--model", "tiny", "--device", "cpu", "--ctx", "64,64"], "--ctx: '64' given twice"),
    (["sweep", "--model", "tiny,", "--device", "cpu"], "--model: an empty value between commas"),
    (["sweep", "--model", "tiny", "--device", "cpu", "--model-arg", "x=1,,2"], "--model-arg x: an empty value"),
    (["study", "precision", "--models", "tiny,,small", "--device", "cpu"], "--models: an empty value"),
    (["advise", "--model", "tiny", "--device", "cpu", "--budget", "inf"], "--budget must be a positive, finite"),
    (["export", str(RUN), "--table", ""], "--table is empty: give it a value or leave it out"),
    (["report", str(RUN), str(RUN)], "is given twice"),
    (["study", "attention", "--device", "cpu", "--d", "-1"], "--d takes comma-separated positive integers"),
])
def test_a_typo_is_refused_with_the_option_named_and_nothing_made(argv, said, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = ["--runs-dir", str(tmp_path / "runs")] if argv[0] in ("sweep", "study", "advise") else []
    assert cli.main([*argv, *runs]) == 2
    assert said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["run", "--model", "tiny", "--device", "cuda"],
    ["sweep", "--model", "tiny", "--device", "cuda,cpu"],
    ["advise", "--model", "tiny", "--device", "cuda"],
])
def test_device_cuda_without_a_gpu_is_refused_before_any_process_starts(argv, tmp_path, capsys, monkeypatch):
    from sysprof.profiler_core.session import rank_checks

    monkeypatch.setattr(rank_checks, "visible_gpu_count", lambda: 0)  # this host, whatever it has: no GPU seen
    monkeypatch.chdir(tmp_path)
    assert cli.main([*argv, "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "--device cuda: no CUDA GPU is visible here" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_side_of_ab_that_starts_with_two_dashes_is_told_how_to_write_it(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["ab", "--a", "--compile", "--b", "", "--model", "tiny"])
    assert exited.value.code == 2
    assert "--a: expected one argument (a value that starts with -- goes after an equals sign: --a='--VALUE')" \
        in capsys.readouterr().err

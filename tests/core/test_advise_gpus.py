"""advise --gpus: which GPUs it takes (present, once, idle), and the budget as minutes on the clock when rounds run
side by side: processes that overlap count once, and the plan affords what several GPUs measure at once."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.errors import UsageError
from sysprof.profiler_core.cli import main as cli
from sysprof.profiler_core.studies.kinds.advise import gpus as advise_gpus
from sysprof.profiler_core.studies.kinds.advise.budget_plan import compile_s, plan
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates

GIB = 1024**3


@pytest.fixture
def node(monkeypatch):
    """Four GPUs as NVML would report them: 2 busy with another job's process, 3 with memory a container cannot
    name the owner of."""
    use = {0: (0, GIB // 2), 1: (0, GIB // 2), 2: (1, 30 * GIB), 3: (0, 40 * GIB)}
    monkeypatch.setattr(advise_gpus, "gpu_use", use.get)
    return use


def test_named_gpus_are_taken_when_present_listed_once_and_idle(node):
    assert advise_gpus.chosen("0, 1", count=4) == ["0", "1"]
    assert advise_gpus.chosen("idle", count=4) == ["0", "1"]
    with pytest.raises(UsageError, match=r"--gpus 0,2: GPU 2 is in use \(1 process\(es\), 30.0 GiB taken\)"):
        advise_gpus.chosen("0,2", count=4)
    with pytest.raises(UsageError, match="GPU 3 is in use"):
        advise_gpus.chosen("3", count=4)
    with pytest.raises(UsageError, match=r"GPU 7 is not here \(4 GPU\(s\), numbered 0 to 3\)"):
        advise_gpus.chosen("0,7", count=4)
    with pytest.raises(UsageError, match="each once"):
        advise_gpus.chosen("0,0", count=4)
    with pytest.raises(UsageError, match="GPU numbers"):
        advise_gpus.chosen("cuda:0", count=4)
    with pytest.raises(UsageError, match="no GPU here"):
        advise_gpus.chosen("0", count=0)


def test_idle_finds_none_when_every_gpu_is_in_use(monkeypatch):
    monkeypatch.setattr(advise_gpus, "gpu_use", lambda index: (1, 10 * GIB))
    with pytest.raises(UsageError, match="every one of the 2 GPUs here is in use"):
        advise_gpus.chosen("idle", count=2)


def test_processes_side_by_side_count_once_on_the_clock():
    assert advise_gpus.union_s([(0, 10), (2, 8), (9, 12), (20, 21)]) == 13
    assert advise_gpus.union_s([]) == 0
    assert advise_gpus.wall_share(4, 2) == 0.5 and advise_gpus.wall_share(4, 3) == 0.5
    assert advise_gpus.wall_share(4, 1) == 1 and advise_gpus.wall_share(2, 8) == 0.5


def test_a_study_that_ran_two_rounds_at_once_spent_the_clock_time_of_one(tmp_path):
    from sysprof.profiler_core.session.arms import SHARED_RECORD
    from sysprof.profiler_core.studies.kinds.advise.costs import spent_s

    for name, window in (("001", (100, 160)), ("002", (101, 170)), ("003", (170, 200))):
        (tmp_path / "shared" / name).mkdir(parents=True)
        (tmp_path / "shared" / name / SHARED_RECORD).write_text(json.dumps({"start": window[0], "end": window[1]}))
    assert spent_s(tmp_path) == 100


def test_two_gpus_take_a_cells_steps_in_half_the_time_but_never_divide_a_compile():
    """A cell's processes side by side take the clock time of one wave of their steps; compiles side by side are
    each cold and share the host's CPUs (on two H200s 44–70 s each against 35–42 s alone), so the plan counts
    them as one after another, and max-autotune's six minutes stay six minutes on any number of GPUs (a plan that
    divided them chose it with a 5-minute budget on four H200s, and its first wave ran past 400 s)."""
    from sysprof.profiler_core.studies.kinds.advise.budget_plan import processes_of

    base = RunConfig(model="small", ctx=256, batch=4, repeats=4)
    found = candidates(base, on_gpu=True, limit=(140 * GIB, "GPU 0's memory"))
    one = plan(found, 3600, base, "cuda", 0.1, shared=True)
    two = plan(found, 3600, base, "cuda", 0.1, shared=True, lanes=2)
    assert [c.name for c in two.chosen] == [c.name for c in one.chosen]
    compiles = sum(compile_s(c.config, processes_of(c.config, base, True)) for c in two.chosen if c.config)
    assert compiles < two.estimate_s < one.estimate_s
    four = plan(found, 270, base, "cuda", 0.1, shared=True, lanes=4)
    assert "torch.compile max-autotune" not in [c.name for c in four.chosen] and four.estimate_s <= 270


def test_gpus_with_fresh_processes_or_on_the_cpu_is_refused_in_one_line(node, monkeypatch):
    monkeypatch.setattr(advise_gpus, "gpu_count", lambda: 4)
    for extra, said in ((["--device", "cpu"], "--gpus measures on GPUs; this config runs on the CPU"),
                        (["--fresh-processes", "--device", "cuda"], "leave one of them out")):
        err = io.StringIO()
        with redirect_stderr(err):
            code = cli.main(["advise", "--model", "tiny", "--gpus", "0,1", "--runs-dir", "unused", *extra])
        assert code != 0 and said in err.getvalue() and "Traceback" not in err.getvalue()
        assert len(err.getvalue().strip().splitlines()) == 1
    assert not Path("unused").exists()

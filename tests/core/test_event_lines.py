"""`sysprof run`'s progress lines: the runner's banner waits until the run has started for real, so a config the
runner refuses after its hello is the one error line alone."""
from sysprof.profiler_core.base import events
from sysprof.profiler_core.cli.event_lines import RunEventPrinter

HELLO = {"event": events.HELLO, "env": {"device_type": "cpu", "device_name": "x86_64", "torch_version": "2.13.0"}}
BUILD = {"event": events.STAGE, "name": "build"}
BANNER = "runner on cpu (x86_64), torch 2.13.0\n"


def printed(seen: list[dict], capsys) -> str:
    print_event = RunEventPrinter()
    for event in seen:
        print_event(event)
    return capsys.readouterr().err


def test_a_config_refused_while_building_prints_no_banner(capsys):
    refused = {"event": events.FAILED, "kind": events.CONFIG, "message": "model factory f.py:build returned a int"}
    assert printed([HELLO, BUILD, refused], capsys) == ""


def test_the_banner_comes_once_the_model_is_built(capsys):
    warmup = {"event": events.STAGE, "name": "warmup", "total": 1}
    step = {"event": events.WARMUP_STEP, "index": 0, "wall_ms": 2.0, "phases_ms": {"forward": 1.0}}
    assert printed([HELLO, BUILD, warmup, step], capsys) == BANNER + "warm-up 0: 2.00 ms (forward 1.00 ms)\n"


def test_a_run_that_fails_for_another_reason_keeps_its_banner(capsys):
    oom = {"event": events.FAILED, "kind": events.OOM, "message": "CUDA out of memory"}
    assert printed([HELLO, BUILD, oom], capsys) == BANNER

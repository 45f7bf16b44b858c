"""Property-based: every `sysprof` subcommand with generated arguments gives an answer or a one-line reason, never a
traceback. Each subcommand's real options (read from its parser) get generated values: their own choices, numbers
out of range, junk text, comma lists, paths that exist and paths that do not.

Commands that would start real work (a run, a sweep, a study, a model inspection) stop at the point where the work
would begin: reaching it means every check before it passed, which is an answer too."""
from __future__ import annotations

import argparse
import dataclasses
import io
import re
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysprof.profiler_core.base.config import ConfigError, RunConfig
from sysprof.profiler_core.base.config_checks import validate
from sysprof.profiler_core.cli import main as cli
from sysprof.profiler_core.cli import trace_command
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.kinds import precision as precision_study
from sysprof.profiler_core.studies.kinds.attention import cells as attention

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLES = 60  # per subcommand: 14 subcommands → 840 cases
PATH_DESTS = {"runs_dir", "output", "nsys", "resume", "directory", "path", "run_a", "run_b", "model_args_file",
              "model_factory"}


ONE_LINE = re.compile(r"^sysprof( [\w-]+)*: error: \S")


class WouldRun(Exception):
    """The command got past every check and would now start the work."""


def would_run(*args, **kwargs):
    raise WouldRun


@pytest.fixture(scope="module", autouse=True)
def stop_before_work(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("fuzz-cwd")  # relative paths the fuzzer makes land here
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        patch.setenv("SYSPROF_RUNS", str(cwd / "runs"))
        patch.setattr(cli, "execute_run", would_run)
        patch.setattr(cli, "inspect_model", would_run)
        patch.setattr(sweep, "create", would_run)  # a sweep's or study's directory is the start of its work
        patch.setattr(sweep, "run", would_run)
        patch.setattr(attention, "run_study", would_run)
        patch.setattr(precision_study, "_precision_lab", would_run)
        patch.setattr(trace_command, "check_installed", would_run)  # the user's script would start next
        yield cwd


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


SUBCOMMANDS = subparsers()
PATHS = [str(DATA / "runs" / "tiny-ctx32"), str(DATA / "runs" / "small-h200-analyses"),
         str(DATA / "runs" / "tiny-ctx32" / "steps.jsonl"), str(DATA / "events" / "tiny_cpu_train.jsonl"),
         str(DATA / "studies"), "no-such-dir", "out.md", "out.csv", "out.tex", "out.json", "out.xyz", "a/b/c.md",
         "/proc/not-writable/x.md", "", ".", "runs"]
junk = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=12)
numbers = st.one_of(st.integers(-3, 10**13).map(str), st.floats(allow_nan=True, allow_infinity=True).map(str))


def values_for(action: argparse.Action) -> st.SearchStrategy[str]:
    if action.dest == "runs_dir":  # where a study that gets past its checks makes its folder: never the repo's data
        return st.sampled_from([path for path in PATHS if not path.startswith(str(DATA))])
    if action.dest in PATH_DESTS:
        return st.sampled_from(PATHS)
    options = [numbers, junk]
    if action.type is int:  # mostly numbers, so that most cases get past the parser to the checks behind it
        options += [st.integers(-3, 10**6).map(str)] * 4
    if action.choices:
        choices = [str(choice) for choice in action.choices]
        options += [st.sampled_from(choices), st.lists(st.sampled_from(choices), min_size=1, max_size=3).map(",".join)]
    options.append(st.lists(st.one_of(numbers, junk), min_size=1, max_size=3).map(",".join))
    return st.one_of(*options)


@st.composite
def command_lines(draw, name: str) -> list[str]:
    parser = SUBCOMMANDS[name]
    optionals = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    positionals = [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
    argv = [name]
    if isinstance(parser._actions[-1], argparse._SubParsersAction) or any(
            isinstance(a, argparse._SubParsersAction) for a in parser._actions):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        argv.append(draw(st.sampled_from(sorted(sub.choices))))
        parser = sub.choices[argv[-1]]
        optionals = [a for a in parser._actions if a.option_strings and a.dest != "help"]
        positionals = [a for a in parser._actions if not a.option_strings]
    for action in positionals:
        if draw(st.integers(0, 9)):  # now and then one is missing
            argv.append(draw(values_for(action)))
    for action in draw(st.lists(st.sampled_from(optionals), max_size=6)) if optionals else []:
        argv.append(draw(st.sampled_from(action.option_strings)))
        if action.nargs != 0:
            argv.append(draw(values_for(action)))
    if draw(st.integers(0, 9)) == 0:
        argv.append(draw(junk))  # a stray word
    return argv


def answer(argv: list[str]) -> tuple[str, int, str]:
    """('ran', exit code, stderr), ('work', 0, stderr) when it reached the work, or ('exit', code, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = cli.main(argv)
        return "ran", code, err.getvalue()
    except WouldRun:
        return "work", 0, err.getvalue()
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return "exit", exc.code if isinstance(exc.code, int) else 1, err.getvalue()


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_answers_generated_arguments_in_one_line(name):
    seen = {"ran": 0, "work": 0, "exit": 0}

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(command_lines(name))
    def check(argv):
        kind, code, stderr = answer(argv)
        seen[kind] += 1
        assert "Traceback" not in stderr, (argv, stderr)
        lines = [line for line in stderr.splitlines() if line.strip()]
        if code and not (kind == "ran" and not lines):  # a result that exits 1 (a failed run) needs no reason
            assert len(lines) == 1 and ONE_LINE.match(lines[0]), (argv, stderr)
    check()
    assert sum(seen.values()) >= EXAMPLES // 2, seen
    print(name, seen, file=sys.stderr)


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(), junk),
                           lambda inner: st.lists(inner, max_size=3), max_leaves=4)


def field_values(field: dataclasses.Field) -> st.SearchStrategy:
    """A JSON value for a config field: one of its own kind most of the time, anything JSON can hold else."""
    default = field.default if field.default is not dataclasses.MISSING else None
    own = {bool: st.booleans(), int: st.integers(-5, 10**9), str: st.one_of(junk, st.sampled_from(KNOWN_WORDS)),
           tuple: st.lists(junk, max_size=3)}.get(type(default), json_values)
    return st.one_of(own, own, json_values)


KNOWN_WORDS = ["tiny", "small", "2.7B", "custom", "fp32", "bf16", "fp16", "train", "forward", "forward_backward",
               "naive", "sdpa", "cpu", "cuda", "mps", "auto", "nsys", "torch", "none", "ddp", "fsdp", "highest",
               "high", "medium", "adamw", "sgd", "models.gpt2:build", "no_such_module:make", "x.py:f"]


@st.composite
def config_dicts(draw) -> dict:
    fields = dataclasses.fields(RunConfig)
    chosen = draw(st.lists(st.sampled_from(fields), unique_by=lambda f: f.name, max_size=8))
    values = {field.name: draw(field_values(field)) for field in chosen}
    if draw(st.integers(0, 19)) == 0:
        values[draw(junk)] = 1  # a field that does not exist
    return values


@settings(max_examples=400, deadline=None, database=None, derandomize=True)
@given(config_dicts())
def test_config_validation_answers_any_json_with_a_config_or_one_line(values):
    try:
        validate(RunConfig.from_dict(values))
    except ConfigError as exc:
        assert str(exc) and "\n" not in str(exc)

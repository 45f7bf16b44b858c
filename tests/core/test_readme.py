import argparse
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    """The two commands in the README's first code block."""
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_install_and_test_commands():
    install_and_launch, run_tests = readme_commands()
    assert install_and_launch.endswith("sysprof-tui")
    assert "pytest" in run_tests


def test_ci_runs_the_readme_test_command_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci_lines


def cli_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every sysprof (sub)command's parser by its words ("run", "study attention"), and sysprof-tui's."""
    from sysprof.profiler_core.cli.main import build_parser

    found: dict[str, argparse.ArgumentParser] = {}

    def walk(words: str, parser: argparse.ArgumentParser) -> None:
        found[words] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(f"{words} {name}".strip(), sub)
    walk("", build_parser())
    return found


def documented_flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions if action.help != argparse.SUPPRESS
            for option in action.option_strings if option.startswith("--") and option != "--help"}


README = (ROOT / "README.md").read_text()
DOC_PAGES = sorted((ROOT / "docs").glob("*.md"))
# What the user reads: the README, a front page, and the pages under docs/ it links for the details.
DOCUMENTED = "\n".join([README, *(page.read_text() for page in DOC_PAGES)])


def test_every_flag_in_help_is_documented_and_every_documented_flag_exists():
    """Every flag of every command is named in the README or a docs/ page, and every flag they name exists."""
    from sysprof.tui.cli import parse_args  # noqa: F401  (sysprof-tui's flags are a subset of sysprof's)

    parsers = cli_parsers()
    undocumented = {words: sorted(flag for flag in documented_flags(parser) if flag not in DOCUMENTED)
                    for words, parser in parsers.items()}
    assert {words: flags for words, flags in undocumented.items() if flags} == {}
    known = {option for parser in parsers.values() for action in parser._actions for option in action.option_strings}
    unknown = set(re.findall(r"(?<![\w/-])--[a-z][a-z0-9-]*", DOCUMENTED)) - known - NOT_SYSPROF_FLAGS
    assert unknown == set()


NOT_SYSPROF_FLAGS = {"--nodes", "--ntasks-per-node", "--no-python", "--standalone",  # torchrun's and srun's, quoted
                     "--config-json",  # the ceiling runner's own (docs/contract.md), started by the advisor
                     "--dist"}  # pytest-xdist's, in the test command


def readme_examples() -> list[str]:
    """The `sysprof …` lines of the code blocks of the README and docs/, continuation lines joined, comments
    dropped."""
    lines = []
    for block in DOCUMENTED.split("```bash\n")[1:]:
        text = block.split("```", 1)[0].replace("\\\n", " ")
        lines += [line.split("  #")[0].strip() for line in text.splitlines() if line.startswith("sysprof ")]
    return lines


def concrete(example: str) -> list[str]:
    """An example as argv: [optional] parts left out, the first of a|b alternatives, <...> placeholders filled."""
    example = re.sub(r"\[[^\[\]]*\]", "", example)
    words = shlex.split(example.replace("<...>", "x").replace("…", ""))[1:]
    return [word.split("|")[0] if "|" in word and not word.startswith("-") else word for word in words]


@pytest.mark.parametrize("example", readme_examples())
def test_each_readme_example_parses(example):
    from sysprof.profiler_core.cli.main import build_parser

    argv = concrete(example)
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"documented example does not parse: {example} → {argv}") from exc


def test_the_readme_points_only_inside_the_repository():
    assert "../" not in README.replace("../shared/fixtures", "") and "DESIGN.md" not in README
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link


MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_is_a_front_page_with_a_picture_of_the_app():
    """At most 250 lines (the details live in docs/), with an image of one of the app's SVG snapshots."""
    assert len(README.splitlines()) <= 250
    images = re.findall(r"!\[[^\]]*\]\((snapshots/[^)\s]+\.svg)\)", README)
    assert images, "no image link to a snapshot under snapshots/"
    assert all((ROOT / image).is_file() for image in images), images


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{page.name}" for page in DOC_PAGES)])
def test_every_relative_link_points_at_a_file(page):
    """A link relative to its page (web links and anchors aside) names a file or folder of the repository."""
    text = (ROOT / page).read_text()
    broken = []
    for link in MARKDOWN_LINK.findall(text):
        target = link.split("#", 1)[0]
        if link.startswith(("http://", "https://", "mailto:")) or not target:
            continue
        if not ((ROOT / page).parent / target).exists():
            broken.append(link)
    assert broken == []


def test_docs_pages_open_with_a_title_and_a_summary():
    for page in DOC_PAGES:
        title, blank, summary = page.read_text().splitlines()[:3]
        assert title.startswith("# ") and blank == "" and summary and not summary.startswith("#"), page.name


def test_every_choice_list_in_the_readme_is_the_options_whole_list():
    """`--dtype fp32|bf16|fp16` in the README or docs/ names every value the option takes, and only those: a list that
    drifts from the code (`--matmul-precision highest|high` once, without medium) is a promise broken either way."""
    from sysprof.profiler_core.base.config import RunConfig
    from sysprof.profiler_core.base.config_checks import validate
    from sysprof.profiler_core.base.errors import ConfigError

    drifted = {}
    for flag, listed in re.findall(r"`(--[a-z][a-z0-9-]*) ([\w.-]+(?:\|[\w.-]+)+)`", DOCUMENTED):
        field = flag[2:].replace("-", "_")
        if field not in {f for f in RunConfig.__dataclass_fields__}:
            continue
        refused = re.search(r"one of (.+?); got", _problem(validate, ConfigError, field) or "")
        accepted = refused.group(1).split(", ") if refused else None
        if accepted is not None and sorted(listed.split("|")) != sorted(accepted):
            drifted[flag] = (listed, accepted)
    assert drifted == {}


def _problem(validate, error, field: str) -> str | None:
    from sysprof.profiler_core.base.config import RunConfig

    try:
        validate(RunConfig(**{field: "no-such-value"}))
    except error as exc:
        return str(exc)
    return None

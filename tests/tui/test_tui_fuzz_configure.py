"""Property-based: whatever is typed into Configure's fields, the form answers with a config or the reasons by
field, and what it shows about the model and its memory renders; never an exception."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from tui_helpers import settle

from sysprof.profiler_core.base.config import DIM_FIELDS, RunConfig
from sysprof.tui.app import build_app
from sysprof.tui.panes.config_fields import CODE_FIELDS, FACTORY_FIELDS
from sysprof.tui.panes.configure import CHECKBOXES, CHOICES, INTEGERS
from sysprof.tui.panes.configure_form import checked_config, form_texts, form_values

DIMS = DIM_FIELDS
TEXT_FIELDS = (*DIMS, *INTEGERS, *FACTORY_FIELDS, *CODE_FIELDS)
typed = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=16),
    st.integers(-10, 10**12).map(str),
    st.sampled_from(["", " 7 ", "-0", "1e3", "0x10", "²", "١٢", "99999999999999999999", "models.x:build",
                     "a=1 b='two'", 'a="unclosed', "x.py:", ":f", "tiny"]),
)

pytestmark = pytest.mark.slow  # real processes or the whole app: `pytest -m "not slow"` leaves them out


@st.composite
def forms(draw) -> dict:
    texts = {name: draw(typed) for name in draw(st.lists(st.sampled_from(TEXT_FIELDS), unique=True, max_size=6))}
    chosen = {name: draw(st.sampled_from(choices)) for name, choices in CHOICES.items()}
    chosen |= {name: draw(st.booleans()) for name in CHECKBOXES}
    chosen["model"] = draw(st.sampled_from(["tiny", "small", "2.7B", "custom"]))
    return form_values(texts, chosen)


@settings(max_examples=500, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(forms(), st.integers(0, 8))
def test_any_form_gives_a_config_or_reasons_and_its_texts_render(values, gpus):
    cfg, problems = checked_config(values, gpus)
    assert cfg is not None or problems
    assert all(isinstance(reason, str) and reason and "\n" not in reason for reason in problems.values())
    model, predicted = form_texts(cfg, problems)
    console = Console(width=80, file=None, record=True)
    with console.capture():
        console.print(model)
        console.print(predicted)
    if not problems:
        assert isinstance(cfg, RunConfig) and "parameters" in model or cfg.model_factory


async def test_junk_typed_into_every_field_is_marked_and_the_app_goes_on(tmp_path):
    app = build_app(runs_dir=str(tmp_path), initial=RunConfig(model="tiny", device="cpu"))
    async with app.run_test(size=(100, 30)) as pilot:
        for name in TEXT_FIELDS:
            field = app.query_one(f"#{name}")
            original = field.value
            for junk in ("²", "1e3", "-5", "x" * 300, "a=1 b"):
                field.value = junk
                await pilot.pause()
                if name in (*DIMS, *INTEGERS):  # none of these is a number such a field takes: each is named
                    assert f"{name}:" in str(app.query_one("#config-error").render())
            field.value = original
        await settle(app, pilot)
        assert app._exception is None and not app.query_one("#run").disabled


async def test_configure_refuses_a_config_that_cannot_fit_before_run(tmp_path):
    app = build_app(runs_dir=str(tmp_path), initial=RunConfig(model="tiny", device="cpu"))
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one("#ctx").value = "99999999"
        await settle(app, pilot)
        error = " ".join(str(app.query_one("#config-error").render()).split())
        assert "is more than the host's RAM" in error and app.query_one("#run").disabled
        app.query_one("#ctx").value = "32"
        await settle(app, pilot)
        assert not app.query_one("#run").disabled


def test_the_checkpointing_box_reaches_the_config_and_a_forward_step_is_refused_on_it():
    base = {"model": "tiny", "device": "cpu", "mode": "train", "activation_checkpointing": True}
    cfg, problems = checked_config(base, 0)
    assert cfg is not None and cfg.activation_checkpointing and not problems
    _, refused = checked_config(base | {"mode": "forward"}, 0)
    assert refused["activation_checkpointing"].startswith("--activation-checkpointing recomputes activations")

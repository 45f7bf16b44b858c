"""--activation-checkpointing: which blocks it wraps (the built-in model's, a nanoGPT-style model's), that the
gradients it recomputes are the ones a plain backward gives, what the memory prediction then keeps, where the
advisor proposes it (a batch that does not fit without it), and the one-line refusals."""
import copy
import dataclasses
from pathlib import Path

import pytest
import torch

from sysprof.models.transformer import TransformerLM
from sysprof.profiler_core.base import rundir
from sysprof.profiler_core.base.config import RunConfig
from sysprof.profiler_core.base.config_checks import config_problems
from sysprof.profiler_core.base.errors import ConfigError
from sysprof.profiler_core.memory.accounting import predict_run_memory
from sysprof.profiler_core.runner.checkpointing import checkpoint_blocks, repeated_blocks
from sysprof.profiler_core.session.passes import Session
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.advise.candidates import candidates
from sysprof.profiler_core.studies.kinds.advise.memory import Seen, measured_peak_scale

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "tests" / "data" / "models" / "nanogpt_style" / "gpt.py"
TINY = RunConfig(model="tiny", ctx=32, batch=2, warmup=1, steps=2, device="cpu")


def _nanogpt_build():
    from sysprof.profiler_core.runner.user_model import load_callable

    return load_callable(f"{GPT}:build", "--model-factory")[0]


def test_it_finds_the_transformer_blocks_of_the_built_in_model_and_of_a_nanogpt_style_one():
    built_in = TransformerLM(TINY.spec(), 32, "naive")
    path, blocks = repeated_blocks(built_in)
    assert path == "layers" and len(blocks) == TINY.spec().layers
    gpt = _nanogpt_build()(vocab_size=64, block_size=32, n_layer=3, n_head=2, n_embd=32)
    assert repeated_blocks(gpt)[0] == "blocks" and len(repeated_blocks(gpt)[1]) == 3
    flat = torch.nn.Sequential(torch.nn.Embedding(64, 32), torch.nn.Linear(32, 64))
    with pytest.raises(ConfigError, match="no torch.nn.ModuleList of blocks of one class"):
        checkpoint_blocks(flat)


def test_the_recomputed_backward_gives_the_plain_backwards_gradients():
    torch.manual_seed(0)
    plain = TransformerLM(dataclasses.replace(TINY, layers=3).spec(), 32, "naive")
    wrapped = copy.deepcopy(plain)
    record = checkpoint_blocks(wrapped)
    assert record == {"checkpointed_blocks": 3, "block_class": "TransformerBlock", "blocks_at": "layers"}
    tokens = torch.randint(0, TINY.spec().vocab, (2, 32))
    for model in (plain, wrapped):
        model(tokens).float().pow(2).mean().backward()
    for (name, a), (_, b) in zip(plain.named_parameters(), wrapped.named_parameters(), strict=True):
        assert torch.allclose(a.grad, b.grad, atol=1e-6), name


def test_the_prediction_keeps_each_layers_input_and_one_layers_tensors():
    """2.7B fp32, ctx 512: batch 8 ended OOM on an H100 (79.2 GiB); with checkpointing its saved activations drop from
    41.0 GiB to 3.0 GiB and the step peaks at the optimizer step instead."""
    big = RunConfig(model="2.7B", ctx=512, batch=8)
    plain, checkpointed = (predict_run_memory(dataclasses.replace(big, activation_checkpointing=on))
                           for on in (False, True))
    assert round(plain["saved_activations_bytes"] / 2**30, 1) == 41.0
    assert round(checkpointed["saved_activations_bytes"] / 2**30, 1) == 3.0
    assert checkpointed["peak_bytes"] < plain["peak_bytes"]


def test_the_advisor_proposes_it_for_the_batch_that_ended_oom_and_not_where_memory_is_ample():
    study = Study.load(ROOT / "tests" / "data" / "studies" / "advise-2p7b-interrupted-h100")
    diagnosis = study.cells[0]
    h100 = (int(diagnosis.summary["env"]["total_memory_bytes"]), "GPU 0's memory")
    seen = Seen(peak_scale=measured_peak_scale(diagnosis.config, max(diagnosis.summary["peak_memory_bytes"].values())))
    found = {c.name: c for c in candidates(diagnosis.config, True, h100, seen)}
    assert found["batch 8"].reason and found["batch 16"].reason  # neither fits as it is
    assert found["batch 16 with activation checkpointing"].reason is None
    assert found["batch 16 with activation checkpointing"].config.activation_checkpointing
    ample = {c.name: c for c in candidates(TINY, False, (2**40, "the host's RAM"), Seen())}
    assert ample["activation checkpointing"].reason.startswith("every larger batch fits without it")


def test_a_forward_step_has_nothing_to_recompute():
    problems = config_problems(dataclasses.replace(TINY, mode="forward", activation_checkpointing=True))
    assert problems == {"activation_checkpointing": "--activation-checkpointing recomputes activations for a "
                                                    "backward; mode forward has none"}


@pytest.mark.slow
def test_a_run_with_it_records_the_blocks_it_wrapped_and_keeps_the_loss(tmp_path):
    plain = Session(TINY, tmp_path / "plain", lambda event: None).run()
    wrapped = Session(dataclasses.replace(TINY, activation_checkpointing=True), tmp_path / "wrapped",
                      lambda event: None).run()
    assert plain["status"] == "ok" and wrapped["status"] == "ok", wrapped
    manifest = rundir.read_json(tmp_path / "wrapped" / rundir.MANIFEST)
    assert manifest["activation_checkpointing"]["checkpointed_blocks"] == TINY.spec().layers
    losses = [rundir.read_steps(tmp_path / name)[-1]["loss"] for name in ("plain", "wrapped")]
    assert losses[0] == pytest.approx(losses[1], rel=1e-4)  # the same seed, the same data, the same updates


def test_a_baseline_measured_with_checkpointing_on_is_not_halved_again():
    from sysprof.profiler_core.studies.kinds.advise.memory import estimated_peak, seen_of

    user = RunConfig(model_factory="tests/data/models/nanogpt_style/gpt.py:build", batch=4)
    peaks = {"forward": 3 * 10**9, "backward": 3 * 10**9, "optimizer": 2 * 10**9}
    plain = seen_of(user, peaks, None)
    assert estimated_peak(dataclasses.replace(user, batch=8), plain) == 4 * 10**9  # 2 kept + 1 × 2
    assert estimated_peak(dataclasses.replace(user, batch=8, activation_checkpointing=True), plain) == 3 * 10**9
    on = dataclasses.replace(user, activation_checkpointing=True)
    assert estimated_peak(dataclasses.replace(on, batch=8), seen_of(on, peaks, None)) == 4 * 10**9

"""Ground truth for the memory replay: snapshots with torch's own allocated/requested peaks beside them.

Run on a CUDA machine from the checkout's root: `OUT=tests/data/memory_truth python3 tests/data/memory_truth/make_truth.py`
(it writes the four snapshots and truth.json there). Peak statistics are reset right before recording starts, so
torch's peaks and the snapshot's span are the same.
"""
import json, lzma, os, pickle, random, sys
import torch
sys.path.insert(0, os.getcwd())
from sysprof.models.presets import PRESETS
from sysprof.models.transformer import TransformerLM

OUT = os.environ.get("OUT", os.path.dirname(os.path.abspath(__file__)))
dev = torch.device("cuda")


def stats():
    s = torch.cuda.memory_stats()
    return {k: s[k] for k in ("allocated_bytes.all.peak", "allocated_bytes.all.current", "requested_bytes.all.peak",
                              "requested_bytes.all.current", "reserved_bytes.all.peak", "reserved_bytes.all.current",
                              "active_bytes.all.peak")} | {"max_memory_allocated": torch.cuda.max_memory_allocated()}


def record(name, body, reset_before=True):
    torch.cuda.synchronize()
    if reset_before:
        torch.cuda.reset_peak_memory_stats()
    before = stats()
    torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
    body()
    torch.cuda.synchronize()
    after = stats()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(f"{OUT}/{name}.pickle.xz", "wb") as f:
        f.write(lzma.compress(pickle.dumps(snap)))
    return {"before": before, "after": after}


def train(model_name, ctx, dtype, warmup, steps, batch=4):
    torch.manual_seed(0)
    spec = PRESETS[model_name]
    model = TransformerLM(spec, ctx).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, spec.vocab, (batch, ctx), device=dev)
    y = torch.randint(0, spec.vocab, (batch, ctx), device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(warmup):
        step()
    return lambda: [step() for _ in range(steps)]


def random_churn(seed=1, n=4000):
    rng = random.Random(seed)
    def body():
        live = []
        for i in range(n):
            if live and rng.random() < 0.45:
                live.pop(rng.randrange(len(live)))
            else:
                kind = rng.random()
                size = rng.randint(1, 4096) if kind < 0.3 else rng.randint(4096, 3 << 20) if kind < 0.7 else rng.randint(3 << 20, 64 << 20)
                live.append(torch.empty(size, dtype=torch.uint8, device=dev))
        live.clear()
    return body


results = {"torch": torch.__version__}
torch.cuda.empty_cache()
results["churn"] = record("churn", random_churn())
torch.cuda.empty_cache()
results["small_fp32_warm"] = record("small_fp32_warm", train("small", 256, "fp32", 3, 2))
torch.cuda.empty_cache()
results["small_bf16_cold"] = record("small_bf16_cold", train("small", 512, "bf16", 0, 2))
torch.cuda.empty_cache()
results["medium_fp32_warm"] = record("medium_fp32_warm", train("medium", 128, "fp32", 2, 2, batch=3))
json.dump(results, open(f"{OUT}/truth.json", "w"), indent=1)
print(json.dumps(results, indent=1))

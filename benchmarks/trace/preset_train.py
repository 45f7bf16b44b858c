"""A plain training loop over a built-in preset (the model `sysprof run --model NAME` builds), with no line of
sysprof in it: a real DataLoader of random tokens, cross-entropy, AdamW with torch's defaults, fp32. What
profile_steps.py traces with `sysprof trace --profile-steps` to set its kernel tables beside a `sysprof run` of the
same model and batch.

    python3 benchmarks/trace/preset_train.py --model small --ctx 256 --batch 4 --steps 20
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from sysprof.models.presets import PRESETS
from sysprof.models.transformer import TransformerLM


class RandomTokens(Dataset):
    def __init__(self, vocab: int, ctx: int):
        self.vocab, self.ctx = vocab, ctx

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.randint(0, self.vocab, (self.ctx + 1,))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="small")
    parser.add_argument("--ctx", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    spec, device = PRESETS[args.model], torch.device("cuda")
    with device:
        model = TransformerLM(spec, args.ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = iter(DataLoader(RandomTokens(spec.vocab, args.ctx), batch_size=args.batch, num_workers=2,
                             pin_memory=True))
    for _ in range(args.steps):
        batch = next(loader).to(device, non_blocking=True)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    print("trained", args.steps, "steps")


if __name__ == "__main__":
    main()

"""A second job on the same GPU: large matmuls back to back for SECONDS, as another tenant's training would be.
Started next to a traced loop to see whether the loop's findings notice it (drift, from the step it began)."""
import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seconds", type=float)
    seconds = parser.parse_args().seconds
    a = torch.randn(8192, 8192, device="cuda")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(10):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()

"""The dataset both training loops here read: each item costs `sleep_ms` of waiting, as a decode or an augmentation
would, without using a core (the scripts run with this folder first on their path)."""
import time

import torch
from torch.utils.data import Dataset


class Costly(Dataset):
    def __init__(self, sleep_ms: float):
        self.sleep_s = sleep_ms / 1e3

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        time.sleep(self.sleep_s)
        return torch.randn(256), torch.randn(1)

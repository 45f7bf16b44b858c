"""The seed reports' studies as commands: sweeps, warm-up, attention, precision, torch.compile."""

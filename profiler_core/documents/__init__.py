"""The documents a run or study directory holds, loaded once: runs, study plans, liveness."""

"""Analyses of measured steps: statistics, comparisons and verdicts, ordering, stability, ranks."""

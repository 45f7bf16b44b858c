"""Kernel-table analysis of profiler output (pure Python: pandas + sqlite3; no torch, no textual).

    attribution.py   kernels labelled with the phase whose range launched them (nsys sqlite)
    torch_trace.py   the same from a torch.profiler trace
    nsys/            finding nsys, its command lines, the sqlite export's tables
    nsys_stats/      the CSVs `nsys stats` writes, read version-tolerantly
    launch_bound.py  per phase: busy share of its GPU span, idle time by cause, launch calls
    launch_verdict.py launch-bound or GPU-bound from those figures, with the reason and the remedy
    summary.py       the analysis document (`sysprof analyze --json`) and the per-phase kernel table

Names load on first use, so importing the package (the session does, to name a backend) costs no pandas.
"""
from sysprof.profiler_core.base.lazy import lazy_exports

_EXPORTS = {
    "KernelAttribution": "attribution", "attribute_kernels": "attribution", "containing_range": "intervals",
    "find_main_thread": "attribution", "KERNEL_CLASSES": "classify", "classify_kernel": "classify",
    "classify_kernels": "classify", "attribution_from_stats_dir": "nsys_stats.attribution",
    "find_report_file": "nsys_stats.csv_reader", "read_stats_csv": "nsys_stats.csv_reader",
    "read_stats_tables": "nsys_stats.csv_reader", "split_stats_csv_line": "nsys_stats.csv_reader",
    "nsys_output_errors": "nsys_stats.text", "nsys_output_skips": "nsys_stats.text",
    "launch_figures": "launch_bound", "split_span": "launch_bound", "judge": "launch_verdict",
    "analyze_sqlite": "summary", "analyze_stats_dir": "summary", "phase_kernel_table": "summary",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)

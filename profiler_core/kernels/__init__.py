"""Kernel-table analysis of Nsight Systems output (pure Python: pandas + sqlite3).

No torch and no textual here: the TUI and the CLI both import this package.
"""

from .attribution import KernelAttribution, attribute_kernels, containing_range, find_main_thread
from .classify import KERNEL_CLASSES, classify_kernel, classify_kernels
from .errors import KernelReportError
from .stats_attribution import attribution_from_stats_dir
from .stats_csv import find_report_file, read_stats_csv, read_stats_tables, split_stats_csv_line
from .stats_text import nsys_output_errors, nsys_output_skips
from .summary import analyze_sqlite, analyze_stats_dir, phase_kernel_table

__all__ = [
    "KERNEL_CLASSES", "KernelAttribution", "KernelReportError", "analyze_sqlite", "analyze_stats_dir",
    "attribute_kernels", "attribution_from_stats_dir", "classify_kernel", "classify_kernels",
    "containing_range", "find_main_thread", "find_report_file", "nsys_output_errors", "nsys_output_skips",
    "phase_kernel_table", "read_stats_csv", "read_stats_tables", "split_stats_csv_line",
]

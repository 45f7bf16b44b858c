"""Reading the lines nsys prints around its tables.

`nsys stats` and `nsys profile` exit 0 when a report is unknown, skipped or
failed, so the text is the only reliable signal.  Console captures also interleave
tables with `Processing [...]`, `NOTICE:` and `** Title (report):` lines; this
module says which report a heading announces and which lines are messages.
"""

from __future__ import annotations

import re

from sysprof.profiler_core.kernels.nsys_stats.schema import canonical_report_name

_STARS_HEADING = re.compile(r"^\s*\*\*\s+.*\((\w+)\):\s*$")
_EXECUTING = re.compile(r"Executing '(\w+)' stats report")
_PROCESSING = re.compile(r"^Processing \[[^\]]*\] with \[(?:[^\]]*/)?(\w+?)(?:\.py)?\]")
# nsys before `nsys stats` existed (2020-2021 `--stats=true`) titled its tables.
_LEGACY_TITLES = (
    (re.compile(r"^CUDA API Statistics"), "cuda_api_sum"),
    (re.compile(r"^CUDA Kernel Statistics"), "cuda_gpu_kern_sum"),
    (re.compile(r"^CUDA Memory Operation Statistics \(nanoseconds\)"), "cuda_gpu_mem_time_sum"),
    (re.compile(r"^CUDA Memory Operation Statistics \(KiB\)"), "cuda_gpu_mem_size_sum"),
    (re.compile(r"^Operating System Runtime API Statistics"), "osrt_sum"),
    (re.compile(r"^NVTX Push-Pop Range Statistics"), "nvtx_sum"),
)
_IMPORTER_FAILURE = re.compile(r"^(Importer error status|Import Failed)")


def heading_report(line: str) -> str | None:
    """The report a heading line announces, canonically named, or None."""
    for pattern in (_STARS_HEADING, _EXECUTING, _PROCESSING):
        match = pattern.search(line)
        if match:
            return canonical_report_name(match.group(1)) or match.group(1)
    stripped = line.strip()
    for pattern, report in _LEGACY_TITLES:
        if pattern.match(stripped):
            return report
    return None


def is_message_line(line: str) -> bool:
    """A line nsys prints for people (progress, notices), never table content."""
    stripped = line.strip()
    return (
        heading_report(line) is not None
        or stripped.startswith(("NOTICE:", "SKIPPED:", "ERROR:", "WARNING:", "Generating", "Generated:"))
        or bool(_STARS_HEADING.match(line))
        or stripped.startswith("[") and "]" in stripped[:12]
    )


def nsys_output_errors(text: str) -> list[str]:
    """Lines of nsys stdout/stderr that report a failure (its exit code is 0 anyway)."""
    errors = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("ERROR:") or _IMPORTER_FAILURE.match(stripped):
            errors.append(stripped)
    return errors


def nsys_output_skips(text: str) -> list[str]:
    """`SKIPPED:` messages: the report was not written (no data, or file exists)."""
    return [line.strip() for line in text.splitlines() if "SKIPPED:" in line]

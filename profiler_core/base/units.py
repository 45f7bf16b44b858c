"""Numbers as text: milliseconds, bytes, durations, significant digits, and "N/A" for what was not measured.

One module for the CLI's tables, the app's screens and the exports, so a value reads the same everywhere.
Pure functions of plain values (no rich, no pandas): the app imports this at startup.
"""
from __future__ import annotations

from collections.abc import Callable

NA = "N/A"  # a reading the device, driver or run did not give (nvitop's rule: missing is data, not an error)
BYTE_UNITS = (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def optional(value: object, fmt: str = "", unit: str = "") -> str:
    """format(value, fmt) and its unit, or N/A for None."""
    return NA if value is None else format(value, fmt) + unit


def ratio(value: float | None) -> str:
    """A slowdown or speedup factor: ×1.22."""
    return NA if value is None else f"×{value:.2f}"


def format_ms(value: float | None) -> str:
    if value is None:
        return NA
    return f"{value / 1e3:.3f} s" if value >= 1000 else f"{value:.2f} ms"


def format_bytes(value: float | None) -> str:
    if value is None:
        return NA
    for unit, scale in BYTE_UNITS:
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{int(value)} B"


def ns_to_ms(value: float | None) -> str:
    """Nanoseconds (kernel times) as milliseconds, N/A when missing."""
    return NA if value is None else f"{value / 1e6:.2f}"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st: a count that reads the same whether its data counts from 0 or 1."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def exact_bytes(value: int | None) -> str:
    """Bytes to the byte, for comparing with a counter: 2,913,556,480 B."""
    return NA if value is None else f"{int(value):,} B"


def duration(seconds: float) -> str:
    """An ETA or an elapsed time: seconds, minutes, or hours and minutes."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds // 3600:.0f} h {seconds % 3600 / 60:02.0f} min"


def significant(value: float) -> str:
    """Six significant digits: 10.0001 and 10.0021 stay apart, and no float noise is printed."""
    return format(value, ".6g")


# Table cells in the app: blank for missing values (a column of N/A would hide the ones that are there).
Formatter = Callable[[object], str]


def blank_or(convert: Callable[[float], str]) -> Formatter:
    return lambda value: "" if value is None else convert(float(value))  # type: ignore[arg-type]  # numbers only


def fixed(digits: int) -> Formatter:
    return blank_or(lambda value: f"{value:,.{digits}f}")


def table_number(value: object) -> str:
    """A study table's cell: ms and MiB with three decimals where they matter, one above 100."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


ns_as_ms = blank_or(lambda value: f"{value / 1e6:,.3f}")
ns_as_us = blank_or(lambda value: f"{value / 1e3:,.1f}")
bytes_cell = blank_or(lambda value: format_bytes(int(value)))


def telemetry_cells(sample) -> list[tuple[str, str]]:
    """(label, text) pairs for display; every missing value reads N/A."""
    gib = lambda b: None if b is None else b / 2**30  # noqa: E731
    throttle = sample.throttle_reasons
    return [
        ("GPU", sample.name or NA),
        ("util", optional(sample.utilization_pct) + ("%" if sample.utilization_pct is not None else "")),
        ("mem", f"{optional(gib(sample.memory_used_bytes), '.1f')}/"
                f"{optional(gib(sample.memory_total_bytes), '.1f')} GiB"),
        ("power", f"{optional(sample.power_w, '.0f')}/{optional(sample.power_limit_w, '.0f')} W"),
        ("SM", f"{optional(sample.sm_clock_mhz)} MHz"),
        ("temp", f"{optional(sample.temperature_c)} °C"),
        ("throttle", NA if throttle is None else ", ".join(throttle) or "none"),
    ]

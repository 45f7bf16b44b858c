"""Loading kernels, CUDA API calls and NVTX ranges from an `nsys export --type sqlite` file.

The schema changes between nsys versions (tables appear only when the trace had
such events; columns get added), so every loader asks the database which tables
and columns exist and returns an empty frame, not an error, when one is missing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from sysprof.profiler_core.base.errors import KernelReportError

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX_TABLE = "NVTX_EVENTS"
# ENUM_NSYS_EVENT_TYPE ids of NVTX push/pop and start/end ranges, for exports
# that lack the enum table.
_NVTX_RANGE_TYPES_FALLBACK = (59, 60)
# A globalTid packs the pid above the low 24 bits that hold the tid.
_TID_BITS = 24


def open_nsys_sqlite(path: str | Path) -> sqlite3.Connection:
    """Open an nsys sqlite export read-only; KernelReportError if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise KernelReportError(f"{path}: no such file")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        names = table_names(conn)
    except sqlite3.DatabaseError as error:
        conn.close()
        raise KernelReportError(f"{path}: not a readable SQLite database ({error})") from None
    if "StringIds" not in names and KERNEL_TABLE not in names:
        conn.close()
        raise KernelReportError(f"{path}: not an nsys export (no StringIds or {KERNEL_TABLE} table)")
    return conn


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def global_pid_of(global_tid: np.ndarray) -> np.ndarray:
    """The process part of nsys globalTid values (int64)."""
    return (global_tid >> _TID_BITS) << _TID_BITS


def load_kernels(conn: sqlite3.Connection) -> pd.DataFrame:
    """One row per kernel: start, end, correlation_id, global_pid, name_id, short_id."""
    columns = ["start", "end", "correlation_id", "global_pid", "name_id", "short_id"]
    if KERNEL_TABLE not in table_names(conn):
        return _empty(columns)
    available = table_columns(conn, KERNEL_TABLE)
    short = "shortName" if "shortName" in available else "demangledName"
    demangled = "demangledName" if "demangledName" in available else short
    # Old exports have no globalPid on kernels; 0 then matches every process.
    pid = "globalPid" if "globalPid" in available else "0"
    sql = (f"SELECT start, end, COALESCE(correlationId, -1), COALESCE({pid}, 0), "
           f"COALESCE({demangled}, -1), COALESCE({short}, -1) FROM {KERNEL_TABLE} "
           "WHERE start IS NOT NULL AND end IS NOT NULL")
    return _query(conn, sql, columns)


def load_launch_calls(conn: sqlite3.Connection) -> pd.DataFrame:
    """CUDA runtime/driver API calls: correlation_id, global_pid, global_tid, api_start, api_end, api_name_id.

    api_end is -1 and api_name_id -1 where the export lacks them (the call's name is a StringIds id).
    """
    columns = ["correlation_id", "global_pid", "global_tid", "api_start", "api_end", "api_name_id"]
    if RUNTIME_TABLE not in table_names(conn):
        return _empty(columns)
    available = table_columns(conn, RUNTIME_TABLE)
    end = "COALESCE(end, -1)" if "end" in available else "-1"
    name = "COALESCE(nameId, -1)" if "nameId" in available else "-1"
    sql = (f"SELECT correlationId, globalTid, start, {end}, {name} FROM {RUNTIME_TABLE} "
           "WHERE correlationId IS NOT NULL AND globalTid IS NOT NULL AND start IS NOT NULL")
    calls = _query(conn, sql, ["correlation_id", "global_tid", "api_start", "api_end", "api_name_id"])
    pid_known = "globalPid" in table_columns(conn, KERNEL_TABLE) if KERNEL_TABLE in table_names(conn) else True
    calls["global_pid"] = global_pid_of(calls["global_tid"].to_numpy()) if pid_known else 0
    return calls[columns]


def load_nvtx_ranges(conn: sqlite3.Connection) -> pd.DataFrame:
    """Closed NVTX ranges: start, end, name, global_tid (names resolved via StringIds)."""
    columns = ["start", "end", "name", "global_tid"]
    if NVTX_TABLE not in table_names(conn):
        return _empty(columns).astype({"name": str})
    available = table_columns(conn, NVTX_TABLE)
    name_sql, join_sql = "e.text", ""
    if "textId" in available and "StringIds" in table_names(conn):
        name_sql, join_sql = "COALESCE(e.text, s.value)", "LEFT JOIN StringIds s ON s.id = e.textId"
    type_ids = ",".join(str(i) for i in _nvtx_range_type_ids(conn))
    # Start/end ranges (the autograd thread's module ranges) may be ended by another thread; the starting one
    # is the thread that ran the module. Exports that leave globalTid empty for them name the ending thread.
    tid_sql = "COALESCE(e.globalTid, e.endGlobalTid)" if "endGlobalTid" in available else "e.globalTid"
    sql = (f"SELECT e.start, e.end, {name_sql}, {tid_sql} FROM {NVTX_TABLE} e {join_sql} "
           f"WHERE e.end IS NOT NULL AND e.eventType IN ({type_ids})")
    ranges = pd.DataFrame(conn.execute(sql).fetchall(), columns=columns)
    ranges["name"] = ranges["name"].fillna("").astype(str)
    return ranges


def load_strings(conn: sqlite3.Connection, ids: np.ndarray) -> pd.Series:
    """StringIds values for the given ids, as a Series indexed by id."""
    if "StringIds" not in table_names(conn) or len(ids) == 0:
        return pd.Series(dtype=str)
    wanted = set(int(i) for i in ids)
    rows = [(i, v) for i, v in conn.execute("SELECT id, value FROM StringIds") if i in wanted]
    return pd.Series(dict(rows), dtype=str)


def load_thread_names(conn: sqlite3.Connection) -> dict[int, str]:
    """globalTid -> thread name (e.g. `pt_autograd_0`), where the export has them."""
    if not {"ThreadNames", "StringIds"} <= table_names(conn):
        return {}
    sql = "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId"
    return {int(tid): str(name) for tid, name in conn.execute(sql)}


def _nvtx_range_type_ids(conn: sqlite3.Connection) -> tuple[int, ...]:
    if "ENUM_NSYS_EVENT_TYPE" not in table_names(conn):
        return _NVTX_RANGE_TYPES_FALLBACK
    sql = "SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name IN ('NvtxPushPopRange', 'NvtxStartEndRange')"
    ids = tuple(row[0] for row in conn.execute(sql))
    return ids or _NVTX_RANGE_TYPES_FALLBACK


def _query(conn: sqlite3.Connection, sql: str, columns: list[str]) -> pd.DataFrame:
    # Integer-only result sets: going through one int64 array is several times
    # faster than DataFrame.from_records for a million rows.
    rows = conn.execute(sql).fetchall()
    if not rows:
        return _empty(columns)
    values = np.array(rows, dtype=np.int64)
    return pd.DataFrame(values, columns=columns)


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({name: np.array([], dtype=np.int64) for name in columns})

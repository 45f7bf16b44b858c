"""Take the checkout's absolute path out of fixtures made by make_module_fixtures.sh before they are committed.

    python3 -m benchmarks.kernels.shorten_fixture_paths FOLDER PREFIX      e.g. PREFIX = the GPU machine's checkout

Every occurrence of PREFIX becomes "<checkout>" in the text files, in the memory snapshot's frames (the pickle is
loaded and written back: plain dicts, lists and strings), and in the nsys export's strings; the export's copies of
the machine's environment variables become "<environment variables removed>". Nothing else changes: the analyzers read
kernels, ranges, allocations and module tags, none of which hold a path.
"""
from __future__ import annotations

import argparse
import lzma
import pickle
import sqlite3
import tempfile
from pathlib import Path

SHORT = "<checkout>"
ENVIRONMENT = b"<environment variables removed>"


def shorten(value, prefix: str):
    if isinstance(value, str):
        return value.replace(prefix, SHORT)
    if isinstance(value, list):
        return [shorten(item, prefix) for item in value]
    if isinstance(value, dict):
        return {shorten(key, prefix): shorten(item, prefix) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(shorten(item, prefix) for item in value)
    return value


def shorten_pickle(path: Path, prefix: str) -> None:
    with lzma.open(path) as handle:
        snapshot = pickle.load(handle)
    with lzma.open(path, "wb", preset=9) as handle:
        pickle.dump(shorten(snapshot, prefix), handle)


def shorten_sqlite(path: Path, prefix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "profile.sqlite"
        database.write_bytes(lzma.decompress(path.read_bytes()))
        connection = sqlite3.connect(database)
        # nsys stores environments as NUL-separated text: SQL's string functions stop at NUL
        connection.text_factory = bytes
        connection.execute("PRAGMA secure_delete = ON")  # deleted rows are zeroed, not left in free space
        tables = [row[0].decode() for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for column in (row[1].decode() for row in connection.execute(f'PRAGMA table_info("{table}")')):
                _shorten_column(connection, table, column, prefix.encode())
        connection.commit()
        connection.execute("VACUUM")
        connection.close()
        path.write_bytes(lzma.compress(database.read_bytes(), preset=9))


def _shorten_column(connection: sqlite3.Connection, table: str, column: str, prefix: bytes) -> None:
    rows = connection.execute(f'SELECT rowid, "{column}" FROM "{table}" WHERE typeof("{column}") = \'text\'').fetchall()
    for rowid, value in rows:
        if value.count(b"=") > 5 and (b"\0" in value or b";" in value):  # a copy of the machine's environment
            new = ENVIRONMENT
        elif table == "META_DATA_CAPTURE" and column == "value" and b"=" in value:
            new = ENVIRONMENT  # one environment variable per row
        else:
            new = value.replace(prefix, SHORT.encode())
        if new != value:
            connection.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (new.decode(), rowid))


def main(folder: Path, prefix: str) -> None:
    for path in sorted(folder.iterdir()):
        if path.name.endswith(".pickle.xz"):
            shorten_pickle(path, prefix)
        elif path.name.endswith(".sqlite.xz"):
            shorten_sqlite(path, prefix)
        elif path.name.endswith(".xz"):
            path.write_bytes(lzma.compress(lzma.decompress(path.read_bytes()).replace(prefix.encode(), SHORT.encode()),
                                           preset=9))
        else:
            path.write_text(path.read_text().replace(prefix, SHORT))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Shorten the GPU machine's checkout path in fixture files.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("prefix", help="the path to replace, e.g. the GPU machine's checkout")
    args = parser.parse_args()
    main(args.folder, args.prefix.rstrip("/"))

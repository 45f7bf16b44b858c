"""The one error family: every mistake a user can make, or a file the tool cannot use, is a SysprofError.

str() is one line meant for the user (the CLI prints it and exits with `exit_code`; the app shows `title` and
the line in a notification); never a traceback. Control flow inside the runner and session (a cancel, a
failed step) uses its own private exceptions, which never reach the user as such.
"""
from __future__ import annotations

# What reading a damaged file raises deep inside a parser, when a flipped bit or a cut leaves it parseable up to
# some field: the file's fault, to be said as such in one line. Anything else is a bug of ours and stays loud.
DAMAGED_DATA = (ValueError, TypeError, KeyError, AttributeError, IndexError, EOFError, RecursionError, OverflowError)


class SysprofError(Exception):
    """A one-line reason for the user; exit 2 (invalid input, nothing ran) unless a subclass says otherwise."""

    title = "Error"
    exit_code = 2

    def __init__(self, message: object, title: str | None = None):
        super().__init__(" ".join(str(message).split()))  # one line, whatever the source wrote
        if title is not None:
            self.title = title


class ConfigError(SysprofError, ValueError):
    """A configuration that cannot run."""

    title = "Invalid configuration"


class UsageError(SysprofError):
    """A command line that asks for something impossible (two unfinished runs to compare, …)."""


class RunDirError(SysprofError, OSError):
    """A run or study directory that cannot be created or read."""

    title = "Run directory"


class BackendUnavailable(SysprofError):
    """The requested profiler cannot run here."""

    title = "Profiler unavailable"


class KernelReportError(SysprofError):
    """A profiler report could not be read or made sense of; the message names the file and the problem."""

    title = "Kernel report"


class StatsSetError(KernelReportError):
    """A directory holds the CSVs of several `nsys stats` runs and none was named: reading it would mix them."""


class SnapshotError(SysprofError):
    """A memory snapshot that cannot be read."""

    title = "Memory snapshot"


class AnalyzeError(SysprofError):
    """A path `sysprof analyze` cannot analyze."""


class ExportError(SysprofError):
    """A table that cannot be written where or how it was asked."""

    title = "Export"


class StudyError(SysprofError):
    """A sweep or study that cannot be planned, created or resumed."""

    title = "Study"


class StudyFailed(SysprofError):
    """A study that started but could not produce its results (a helper process failed): exit 1, like a
    failed run."""

    exit_code = 1


class InspectFailed(SysprofError):
    """The user's model raised while it was built or counted on the meta device (its traceback is kept)."""

    title = "Inspect"
    exit_code = 1

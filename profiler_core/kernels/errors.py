"""The one exception type of the kernel-table package."""


class KernelReportError(Exception):
    """A profiler report could not be read or made sense of.

    The message is a single line meant for the user (a CLI prints it on stderr
    and exits 2; the TUI shows it in a modal), so it names the file and the
    problem, never a traceback.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))

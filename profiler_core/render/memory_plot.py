"""The active-memory-over-time plot people paste into reports: the recorded steps with their phases shaded and the
peak marked. Written as PNG and SVG with matplotlib (the `plots` extra) and drawn in the terminal by the app with
plotext; both draw the spans and the peak computed here.
"""
from __future__ import annotations

from pathlib import Path

GIB = 2**30
PHASE_COLORS = {"forward": "#4c72b0", "backward": "#dd8452", "optimizer": "#55a868"}
IMAGE_SUFFIXES = (".png", ".svg")
MISSING_MATPLOTLIB = "no memory timeline image: matplotlib is not installed (pip install 'sysprof-tui[plots]')"


def time_key(timeline: dict) -> str:
    """Which phase-mark field lines up with `t`: milliseconds when the trace had times, else the event index."""
    return "t_ms" if timeline.get("t_unit") == "ms" else "event_index"


def phase_spans(timeline: dict) -> list[dict]:
    """[{phase, step, start, end}] in the units of timeline["t"]: each phase from its mark to the next one (the
    last to the end of the recording)."""
    key, times = time_key(timeline), timeline.get("t") or [0]
    marks = [mark for mark in timeline.get("phase_marks") or [] if mark.get(key) is not None]
    ends = [mark[key] for mark in marks[1:]] + [times[-1]]
    return [{"phase": mark.get("phase"), "step": mark.get("step"), "start": mark[key], "end": end}
            for mark, end in zip(marks, ends)]


def peak_point(timeline: dict) -> tuple[float, int] | None:
    """(time, bytes) of the highest point of the (downsampled, peak-preserving) series."""
    levels = timeline.get("active_bytes") or []
    if not levels:
        return None
    index = max(range(len(levels)), key=levels.__getitem__)
    return (timeline.get("t") or list(range(len(levels))))[index], levels[index]


def x_label(timeline: dict) -> str:
    return "time (ms)" if timeline.get("t_unit") == "ms" else "allocator event"


def write_timeline_images(timeline: dict, directory: Path, title: str, stem: str = "timeline") -> list[Path]:
    """DIRECTORY/STEM.png and .svg; ImportError without matplotlib (the caller says so in one line)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed

    figure = Figure(figsize=(10, 4), layout="constrained")
    axes = figure.subplots()
    times, levels = timeline.get("t") or [], timeline.get("active_bytes") or []
    axes.step(times, [level / GIB for level in levels], where="post", color="black", linewidth=1)
    labelled: set[str] = set()
    for span in phase_spans(timeline):
        phase = span["phase"]
        axes.axvspan(span["start"], span["end"], color=PHASE_COLORS.get(phase, "#999999"), alpha=0.18, linewidth=0,
                     label=None if phase in labelled else phase)
        labelled.add(phase)
    peak = peak_point(timeline)
    if peak is not None:
        axes.plot([peak[0]], [peak[1] / GIB], "v", color="crimson")
        axes.annotate(f"peak {peak[1] / GIB:.2f} GiB", (peak[0], peak[1] / GIB), textcoords="offset points",
                      xytext=(6, 4), color="crimson")
    axes.set(title=title, xlabel=x_label(timeline), ylabel="active memory (GiB)")
    axes.set_ylim(0, max(levels, default=0) / GIB * 1.15 or 1)  # headroom for the peak's label
    axes.legend(loc="lower right", fontsize="small")
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{stem}{suffix}" for suffix in IMAGE_SUFFIXES]
    with rc_context({"svg.fonttype": "none"}):  # SVG text stays text: searchable, editable in a report
        for path in paths:
            figure.savefig(path, dpi=150)
    return paths

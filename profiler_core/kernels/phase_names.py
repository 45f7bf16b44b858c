"""Which of a profile's NVTX ranges mark the phases and steps, whatever the script that made it called them.

The attribution reads sysprof's own names (`forward`, `backward`, `optimizer step`, `step N`). A user's profile
says `fwd`, `bwd`, `opt`, `train step N`, …: the known aliases (models/phases.py) or the names given with
`--phase forward=NAME,backward=NAME,optimizer=NAME` are renamed to the tool's own before attribution, and a note
says which ranges were used, or lists the ranges found when none could be."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from sysprof.models.phases import PHASE_ALIASES, PHASE_RANGES, PHASES, STEP_ALIAS, STEP_RANGE, is_tool_range, step_range

MOST_LISTED = 12  # ranges named in the "none matched" note


def rename_phase_ranges(names: pd.Series, chosen: Mapping[str, str] | None = None,
                        instances: bool = True) -> tuple[pd.Series, list[str]]:
    """Range names with each phase's and step's ranges renamed to the tool's own, and the notes saying what was
    taken for what (or, where no phase range is found, which ranges there are). instances: each entry is one range
    instance, so the notes can count them (not so for nvtx_kern_sum's rows, one per range and kernel)."""
    renames = {name: PHASE_RANGES[phase] for name in names.unique()
               if (phase := _phase_of(name, chosen or {})) is not None and name != PHASE_RANGES[phase]}
    renamed = names.replace(renames) if renames else names
    steps = renamed.str.extract(STEP_ALIAS)[0]
    user_steps = steps.notna() & ~renamed.str.match(STEP_RANGE)
    renamed = renamed.where(~user_steps, steps.map(lambda index: step_range(int(index)) if pd.notna(index) else ""))
    return renamed, _notes(names, renamed, renames, chosen or {}, int(user_steps.sum()), instances)


def _phase_of(name: str, chosen: Mapping[str, str]) -> str | None:
    for phase, wanted in chosen.items():
        if name == wanted:
            return phase
    folded = name.strip().lower()
    for phase, aliases in PHASE_ALIASES.items():
        if phase not in chosen and folded in aliases:
            return phase
    return None


def _notes(original: pd.Series, renamed: pd.Series, renames: dict[str, str], chosen: Mapping[str, str],
           user_steps: int, instances: bool) -> list[str]:
    found = {phase: int((renamed == PHASE_RANGES[phase]).sum()) for phase in PHASES}
    notes = [f"--phase {phase}={name!r}: no range of that name in this profile"
             for phase, name in chosen.items() if name not in set(original)]
    if not any(found.values()):
        return [*notes, _none_found(original, instances)]
    if renames or user_steps:
        taken = {PHASE_RANGES[p]: p for p in PHASES}
        used = [f"{taken[target]} ← {name!r}" + (f" ({int((original == name).sum())})" if instances else "")
                for name, target in renames.items()]
        steps = ["step N ← ranges like 'train step N'" + (f" ({user_steps})" if instances else "")] \
            if user_steps else []
        notes.append("phase ranges used: " + "; ".join(used + steps))
    missing = [phase for phase in PHASES if not found[phase]]
    if missing and renames:
        notes.append(f"no range found for {', '.join(missing)}: name it with --phase {missing[0]}=NAME")
    return notes


def _none_found(original: pd.Series, instances: bool) -> str:
    """No phase range at all: list the profile's own ranges, most frequent first, so the user can name them."""
    theirs = original[~original.map(is_tool_range) & (original != "")].value_counts()
    if theirs.empty:
        return "no forward, backward or optimizer range in this profile (and no other named range)"
    listed = ", ".join(f"{name!r}" + (f" ({count})" if instances else "")
                       for name, count in theirs.head(MOST_LISTED).items())
    more = f", and {len(theirs) - MOST_LISTED} more" if len(theirs) > MOST_LISTED else ""
    return (f"no forward, backward or optimizer range recognised; ranges found: {listed}{more}: name the phases "
            "with --phase forward=NAME,backward=NAME,optimizer=NAME")


def drop_unbalanced(ranges: pd.DataFrame, kernels: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Ranges longer than the whole capture (first to last kernel) cannot be a phase or step of it: pushed before
    the capture began or never popped. They are left out of the attribution, and a note names them."""
    if ranges.empty or kernels.empty:
        return ranges, []
    span = int(kernels["end"].max() - kernels["start"].min())
    too_long = (ranges["end"] - ranges["start"]) > span
    if not too_long.any():
        return ranges, []
    named_by = "own_name" if "own_name" in ranges else "name"  # as the profile names it ('fwd', not 'forward')
    longest = (ranges[too_long].assign(duration=ranges["end"] - ranges["start"])
               .groupby(named_by)["duration"].max().sort_values(ascending=False))
    named = ", ".join(f"{name!r} ({ns / 1e9:.3f} s)" for name, ns in longest.items())
    return ranges[~too_long], [f"unbalanced NVTX ranges left out: {named}, each longer than the capture's "
                               f"{span / 1e9:.3f} s of kernels (pushed before it began, or never popped)"]

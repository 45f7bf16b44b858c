"""`sysprof ab`: is B faster than A on this node? The ab kind runs the pair (studies/kinds/ab/); this command
prints its comparison as `sysprof compare` prints it. Its study directory is kept like any sweep: `sysprof compare`
of its two cells, `sysprof export` of its tables and the app's Studies and Runs screens read it later."""
from __future__ import annotations

import argparse
import time
from typing import cast

from sysprof.profiler_core.analysis.compare import compare_summaries, config_differences
from sysprof.profiler_core.base import events
from sysprof.profiler_core.base.errors import UsageError
from sysprof.profiler_core.base.records import RunSummary
from sysprof.profiler_core.cli.compare import add_min_effect_option, print_comparison
from sysprof.profiler_core.render.whole_tables import add_format_option
from sysprof.profiler_core.studies import sweep
from sysprof.profiler_core.studies.document import Study
from sysprof.profiler_core.studies.kinds.ab.study import KIND


def add_ab_options(parser: argparse.ArgumentParser) -> None:
    KIND.add_arguments(parser)
    add_min_effect_option(parser)
    parser.add_argument("--runs-dir", help="where the pair's study directory goes (default: ./runs)")
    parser.add_argument("--events", action="store_true", help="JSON lines of progress on stdout")
    parser.add_argument("--json", action="store_true", help="the comparison as JSON")
    parser.add_argument("--force", action="store_true",
                        help="run a side even when its predicted memory is more than the device has (it ends OOM)")
    add_format_option(parser)


def command_ab(args) -> int:
    started = time.perf_counter()
    study_dir = KIND.run(args)
    study = Study.load(study_dir)
    summary_a, summary_b = study.summaries
    for side, summary in (("A", summary_a), ("B", summary_b)):
        if not summary or summary.get("status") not in events.DONE_STATUSES or not summary.get("phases"):
            raise UsageError(f"{side} did not finish ({(summary or {}).get('status')}): see {study_dir}")
    assert summary_a is not None and summary_b is not None
    cfg_a, cfg_b = (cell.config for cell in study.cells)
    differences = config_differences(cfg_a.to_dict(), cfg_b.to_dict())
    rows = compare_summaries(summary_a, summary_b, args.min_effect)
    paths = [sweep.cell_dir(study_dir, index, cfg) for index, cfg in enumerate((cfg_a, cfg_b))]
    print_comparison(args, (paths[0], cast("RunSummary", summary_a)), (paths[1], cast("RunSummary", summary_b)),
                     rows, differences)
    if not args.json:
        print(f"{time.perf_counter() - started:.0f} s · study directory: {study_dir}")
    return 0

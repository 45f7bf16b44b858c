"""`python -m sysprof.profiler_core.session`: one whole run (its passes, and its repeats) as a process, for the app."""
import sys

from sysprof.profiler_core.session.repeats import main

sys.exit(main())

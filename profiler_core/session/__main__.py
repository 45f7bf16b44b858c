"""`python -m profiler_core.session`: one whole run (its passes) as a process, for the app (see passes.py)."""
import sys

from profiler_core.session.passes import main

sys.exit(main())

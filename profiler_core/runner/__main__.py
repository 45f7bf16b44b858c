"""`python -m sysprof.profiler_core.runner`: one runner process (see engine.py)."""
import sys

from sysprof.profiler_core.runner.engine import main

sys.exit(main())

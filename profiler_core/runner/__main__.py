"""`python -m profiler_core.runner`: one runner process (see engine.py)."""
import sys

from profiler_core.runner.engine import main

sys.exit(main())

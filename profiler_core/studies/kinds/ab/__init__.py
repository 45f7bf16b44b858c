"""`sysprof ab` (also `sysprof study ab`): is B faster than A on this node? sides.py reads the two configs over the
shared options; study.py is the kind (its KIND is the registry's): it runs them as a sweep of two cells, interleaved
in time, and builds the B-against-A table."""

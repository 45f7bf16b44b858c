"""`sysprof advise`: which change makes a config's step faster (or more tokens per joule) on this node, answered by
running it. study.py plans and runs the stages (its KIND is the registry's); candidates.py knows the changes and
the plan a budget allows; diagnosis.py reads the profiled baseline; together.py, refine.py and ceiling.py are the
stages after the first; tables.py, costs.py, memory.py, goal.py and gpus.py what they share."""

"""`sysprof advise`: which change makes a config's step faster (or more tokens per joule) on this node, answered by
running it. study.py plans and runs the stages (its KIND is the registry's), plan_record.py keeps its plan;
candidates.py knows the changes, budget_plan.py the plan a budget allows; diagnosis.py reads the profiled baseline;
together.py, combination.py, refine_plan.py with refine.py, and ceiling.py are the stages after the first;
stages.py, costs.py, memory.py, goal.py and gpus.py what they share; tables.py builds the tables, with step_rows.py,
recommendation.py and cell_verdicts.py."""

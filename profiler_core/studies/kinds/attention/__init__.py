"""`sysprof study attention`: the attention implementations (eager, compiled, SDPA, a user's own) timed alone over
head dims and sequence lengths, with their memory. study.py is the kind (its KIND is the registry's); cells.py
plans the grid and its bench processes; memory.py predicts what each cell keeps; tables.py builds its tables."""

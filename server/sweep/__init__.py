"""``kdd sweep`` and ``kdd tune``: many configs through the engine as Ray tasks (docs/sweep.md).

``tasks`` reads the inputs into keyed tasks, ``work`` runs one in a worker (the CLI's JSON objects
as rows), ``ray_pool`` runs them on a local or remote Ray cluster, ``run`` streams rows into the
rows file and resumes from it, ``rows`` reads and appends that file, ``summary`` prints its table,
``tune`` searches knob values with Optuna over the same tasks.
"""

"""The plan layer: expand a ``StudySpec`` into per-block axes, the case table, case ids,
the cost model and the batch plan. Imports the study layer only."""

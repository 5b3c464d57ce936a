"""The cluster layer: where the workers come from (an embedded LocalCluster, an existing
scheduler, dask-jobqueue SLURM/PBS jobs) and the worker start-up. Imports no run code."""

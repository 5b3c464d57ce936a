"""The run layer: the Dask graph (warm kernels -> reference -> batch tasks -> summary), the
worker-side batch task and the single-case path."""

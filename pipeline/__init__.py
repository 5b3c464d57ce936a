"""mbstudy pipeline: study file -> grid -> Dask graph -> Zarr store -> aggregation.

The chain, one stage per module (each a function from one typed value to the next)::

    studies/NAME.toml
      -> pipeline.study.load_study        StudySpec (validated, frozen) or StudyError
      -> pipeline.grid.expand_grid        Grid: blocks, axes, case table, batch plan
      -> pipeline.store.ResultStore       template of the Zarr store (or resume)
      -> pipeline.graph.run_study         Dask: warm kernels -> reference -> batches
           on a worker: pipeline.batch.run_batch -> solvers.runner.run_case
                        -> solvers.metrics.compute_metrics -> ResultStore.write_batch
      -> pipeline.results.open_results    xarray Dataset with the grid axes unstacked
      -> pipeline.aggregate.aggregate     tables (ratios to a baseline, variation)

``pipeline`` reaches the numerics only through ``solvers.registry`` and the
``solvers.runner``/``solvers.metrics`` entry points; ``solvers`` never imports
``pipeline``.
"""

__version__ = "0.1.0"


def open_results(store, group=None, stacked=False):
    """Block ``group`` of ``store`` as an xarray Dataset; without ``group`` the whole store
    as an ``xarray.DataTree`` (``pipeline.store.reader.open_results``)."""
    from mbstudy.pipeline.store.reader import open_results as _open

    return _open(store, group, stacked=stacked)


__all__ = ["__version__", "open_results"]

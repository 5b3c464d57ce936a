"""mbstudy pipeline: study file -> grid -> Dask graph -> Zarr store -> aggregation.

The chain, one layer per sub-package (lower layers never import upper ones)::

    studies/NAME.toml
      -> study.load_study            StudySpec (validated, frozen, hashed) or StudyError
      -> plan.expand_grid            Grid: blocks, axes, case table, case ids, batch plan
      -> run.launch                  the public entry point (CLI and reproduce call it):
           store.ResultStore         template of the Zarr store (or resume, its batch plan)
           cluster.open_client       LocalCluster, existing scheduler, SLURM/PBS jobs
           run.graph.run_study       Dask: warm kernels -> reference -> batches
             on a worker: run.batch.run_batch -> solvers.runner.run_case
                          -> solvers.metrics.compute_metrics -> ResultStore.write_batch
      -> store.open_results          xarray Dataset with the grid axes unstacked
      -> analysis.aggregate          tables (ratios to a baseline, variation)
      cli                            the ``mbstudy`` command line, one module per group

docs/explanation/architecture.md walks through it module by module.

``pipeline`` reaches the numerics only through ``solvers.api`` (the one list of the
names it uses); ``solvers`` never imports ``pipeline``.
"""

from mbstudy import __version__


def open_results(store, group=None, stacked=False):
    """Block ``group`` of ``store`` as an xarray Dataset; without ``group`` the whole store
    as an ``xarray.DataTree`` (see ``mbstudy.pipeline.store.reader``)."""
    from mbstudy.pipeline.store.reader import open_results as _open

    return _open(store, group, stacked=stacked)


def __getattr__(name: str):
    """``mbstudy.pipeline.launch`` is :func:`mbstudy.pipeline.run.launch.launch`, imported
    on first use."""
    if name == "launch":
        from mbstudy.pipeline.run.launch import launch

        return launch
    raise AttributeError(f"module 'mbstudy.pipeline' has no attribute {name!r}")


__all__ = ["__version__", "launch", "open_results"]

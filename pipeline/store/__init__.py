"""The store layer: the Zarr store's template, batch writes (done mask last), the lock,
and the readers (``open_results``). Imports the study and plan layers."""

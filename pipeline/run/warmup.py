"""Worker warm-up: every worker compiles or loads the study's kernels once when it starts."""

from __future__ import annotations

from distributed import WorkerPlugin
from mbstudy.pipeline.run.batch import warm_kernels


class WarmKernelsPlugin(WorkerPlugin):
    """Compile or load from numba's cache every kernel of the study on each worker.

    Registered with ``client.register_plugin``, it also runs on workers that join later
    (new SLURM jobs), so a hundred workers do not each stall on their first batch. The
    seconds spent per kernel are kept on the worker as ``mbstudy_warm_s``.
    """

    name = "mbstudy-warm-kernels"

    def __init__(self, triples: list[tuple[str, str, str]]) -> None:
        self.triples = [tuple(t) for t in triples]

    def setup(self, worker) -> None:
        worker.mbstudy_warm_s = warm_kernels(self.triples)

"""The launch display's kernels line and the summary's split of compiles from cache loads
(pipeline/run/progress.py), driven with the events run_study emits."""

from __future__ import annotations

from mbstudy.pipeline.run.progress import console, kernel_line, progress_bar, update_kernel_task


def test_the_kernels_line_says_what_compiles_then_what_it_cost():
    progress = progress_bar(console(), disable=True)
    task = progress.add_task("kernels", total=None, failed=0)
    kernels = ["andrews/projection/dopri5", "andrews/baumgarte/dopri5", "andrews/drcs/dopri5"]

    def line():
        return progress.tasks[0].description

    update_kernel_task(progress, task, {}, list(kernels))
    assert line() == ("compiling 0/3 kernels: projection+dopri5, baumgarte+dopri5,"
                      " drcs+dopri5 ...")  # fmt: skip
    update_kernel_task(progress, task, {"kernel": kernels[1], "s": 40.0, "compiled": True},
                       [kernels[0], kernels[2]])  # fmt: skip
    assert line() == "compiling 1/3 kernels: projection+dopri5, drcs+dopri5 ..."
    assert progress.tasks[0].completed == 1 and progress.tasks[0].total == 3
    update_kernel_task(progress, task, {"kernel": kernels[0], "s": 0.8, "compiled": False},
                       [kernels[2]])  # fmt: skip
    update_kernel_task(progress, task, {"kernel": kernels[2], "s": 41.0, "compiled": True}, [])
    assert line() == "kernels ready: 2 compiled, 1 from cache"
    assert progress.tasks[0].completed == 3


def test_the_summary_separates_compiles_from_cache_loads():
    kernels = {"fourbar/projection/dopri5": {"s": 42.0, "compiled": True},
               "fourbar/none/rk4": {"s": 0.7, "compiled": False},
               "fourbar/baumgarte/rk4": {"s": 33.0, "compiled": True}}  # fmt: skip
    assert kernel_line(kernels) == (
        "kernels: compiled 2 in 75.0 s (projection+dopri5 42.0 s, baumgarte+rk4 33.0 s);"
        " loaded 1 from cache in 0.7 s"
    )
    assert kernel_line({"a/b/c": {"s": 0.5, "compiled": False}}) == (
        "kernels: loaded 1 from cache in 0.5 s"
    )


def test_the_case_bar_advances_per_case_and_each_batch_counts_once():
    """Batch tasks publish (block, batch, cases done) events; the bar advances by each
    event's increment, ignores stale or late events, and a finished batch tops its own
    count up to its size (pipeline/run/launch.py, _case_progress)."""
    from mbstudy.pipeline.run.batch import PROGRESS_TOPIC, BatchReport
    from mbstudy.pipeline.run.launch import _case_progress

    class Client:
        def subscribe_topic(self, topic, handler):
            assert topic == PROGRESS_TOPIC
            self.handler = handler

    client = Client()
    progress = progress_bar(console(), disable=True)
    task = progress.add_task("cases", total=10, failed=0)
    on_batch = _case_progress(client, progress, task, {"failed": 0})

    def done():
        return progress.tasks[0].completed

    client.handler((0.0, ("a", 0, 2)))
    client.handler((0.0, ("a", 1, 1)))
    assert done() == 3
    client.handler((0.0, ("a", 0, 1)))  # out of order: no step back
    client.handler((0.0, ("a", 0, 4)))
    assert done() == 5
    on_batch(BatchReport(block="a", batch=0, n=5, ok=4))  # 1 more case, 1 failed
    assert done() == 6 and progress.tasks[0].fields["failed"] == 1
    client.handler((0.0, ("a", 0, 5)))  # late event of a finished batch: ignored
    assert done() == 6
    on_batch(BatchReport(block="a", batch=1, n=5, ok=5))
    assert done() == 10

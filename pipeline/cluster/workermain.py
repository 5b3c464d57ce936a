"""The ``__main__`` module of the LocalCluster's worker processes.

multiprocessing starts a child (forkserver or spawn) by re-running the parent's main module
as ``__mp_main__``: the user's script, which would launch again (a script without an
``if __name__ == "__main__":`` guard: a bootstrapping ``RuntimeError``, a second launch
refused by the store's lock), or ``<stdin>``, which cannot be re-run at all
(``FileNotFoundError``). While a LocalCluster of a launch lives, its children are told to
run this module instead (:func:`mbstudy.pipeline.private_api.set_child_main`,
:mod:`.local`); the workers need nothing of the user's ``__main__``: every task is a
function of mbstudy.

It also makes the worker ignore SIGINT: a terminal's Ctrl-C goes to the whole process
group, and only the launcher should act on it (it cancels the tasks and closes the
cluster, which ends the workers); a worker that took it raised ``KeyboardInterrupt``
inside distributed's event loop and printed its traceback. Set before asyncio's runner
starts, so that it keeps the setting (it replaces only Python's default handler).

And it quiets what the worker logs about its connections while the cluster closes
(:mod:`.workerlogs`).
"""

from __future__ import annotations

import signal
import threading

from mbstudy.pipeline.cluster import workerlogs

if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGINT, signal.SIG_IGN)

workerlogs.install()

"""Transport security shared by the clusters mbstudy starts (leaf module).

Every cluster mbstudy starts (the LocalCluster and SLURM/PBS workers) speaks TLS with
mutual authentication and ephemeral credentials made for that launch
(``distributed.security.Security.temporary()``: a fresh CA, key and certificate in
memory), and binds to loopback unless a site names a network interface. A client without
the launch's certificate cannot connect, so no other process can submit code to the
workers.
"""

from __future__ import annotations

LOOPBACK = "127.0.0.1"


def launch_security():
    """Ephemeral mutual-TLS credentials for one launch's cluster (see the module docstring).
    Every scheduler, worker and client of the launch gets the same CA-signed certificate;
    ``require_encryption`` makes the comms refuse plain TCP."""
    from distributed.security import Security

    return Security.temporary()

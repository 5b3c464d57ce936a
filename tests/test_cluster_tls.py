"""The LocalCluster of a launch speaks mutual TLS with ephemeral credentials:
its own client computes, a plain-TCP client and a TLS client of another CA are refused,
so no other local process can run code on the workers."""

from __future__ import annotations

import socket

import pytest
from distributed import Client
from distributed.security import Security
from mbstudy.pipeline.cluster.local import close_cluster, local_cluster

pytestmark = pytest.mark.cluster




@pytest.fixture(scope="module")
def cluster():
    c = local_cluster(1)
    yield c
    close_cluster(c)


def test_the_launch_client_computes_over_tls(cluster):
    addr = cluster.scheduler_address
    assert addr.startswith("tls://127.0.0.1:"), addr
    assert cluster.security.require_encryption
    with Client(cluster) as client:
        assert client.submit(sum, [1, 2, 3]).result(timeout=60) == 6
        workers = client.scheduler_info()["workers"]
        assert workers and all(a.startswith("tls://") for a in workers)


def test_a_plain_tcp_client_is_refused(cluster):
    port = int(cluster.scheduler_address.rsplit(":", 1)[1])
    with pytest.raises(OSError):
        Client(f"tcp://127.0.0.1:{port}", timeout="3s")
    # nor does a raw socket get any Dask message out of it
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"\x00" * 64)
        sock.settimeout(5)
        try:
            data = sock.recv(64)
        except (TimeoutError, ConnectionResetError):
            data = b""
        assert b"op" not in data


def test_the_credentials_are_an_ephemeral_p256_ca_of_their_own(cluster):
    """One self-signed certificate (the CA) for every role, an ECDSA P-256 key signed with
    SHA-256, valid now; each launch gets another key."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from mbstudy.pipeline.cluster.security import launch_security

    sec = cluster.security
    assert sec.tls_ca_file == sec.tls_scheduler_cert == sec.tls_worker_cert
    cert = x509.load_pem_x509_certificate(sec.tls_ca_file.encode())
    key = serialization.load_pem_private_key(sec.tls_worker_key.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()
    assert cert.issuer == cert.subject and isinstance(cert.signature_hash_algorithm,
                                                       hashes.SHA256)  # fmt: skip
    cert.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                             ec.ECDSA(cert.signature_hash_algorithm))  # self-signed
    now = datetime.datetime.now(datetime.UTC)
    assert cert.not_valid_before_utc <= now < cert.not_valid_after_utc
    assert launch_security().tls_worker_key != sec.tls_worker_key


def test_a_client_with_another_ca_is_refused(cluster):
    with pytest.raises(OSError):
        Client(cluster.scheduler_address, security=Security.temporary(), timeout="3s")
    from mbstudy.pipeline.cluster.security import launch_security

    with pytest.raises(OSError):  # another launch's credentials
        Client(cluster.scheduler_address, security=launch_security(), timeout="3s")


def test_a_tls_client_without_a_certificate_is_refused_by_the_server(cluster):
    """Mutual TLS: a client that trusts anything but shows no certificate gets no session
    (the scheduler requires a certificate signed by the launch's own CA)."""
    import ssl

    port = int(cluster.scheduler_address.rsplit(":", 1)[1])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
            with ctx.wrap_socket(raw) as tls:
                # TLS 1.3 reports a refused client certificate at the first read
                tls.sendall(b"\x00" * 8)
                if not tls.recv(64):
                    raise ConnectionResetError("closed by the scheduler")


def test_a_ctrl_c_during_a_swallowing_import_is_raised_afterwards():
    """A SIGINT that arrives while third-party code swallows every exception (as an
    optional import with a bare ``except:`` does) is not lost: it is raised on exit."""
    import os
    import signal
    import time

    from mbstudy.pipeline.cluster.local import sigint_deferred

    saved = signal.signal(signal.SIGINT, signal.default_int_handler)  # not the runner's
    before = signal.getsignal(signal.SIGINT)
    ran_to_end = False
    with pytest.raises(KeyboardInterrupt):
        with sigint_deferred():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
            except BaseException:  # what a careless import does
                pass
            ran_to_end = True
    assert ran_to_end
    assert signal.getsignal(signal.SIGINT) is before
    signal.signal(signal.SIGINT, saved)

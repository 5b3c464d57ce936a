"""Transport security shared by the clusters mbstudy starts (leaf module).

Every cluster mbstudy starts (the LocalCluster and SLURM/PBS workers) speaks TLS with
mutual authentication and ephemeral credentials made for that launch
(what ``distributed.security.Security.temporary()`` makes, a fresh CA, key and
certificate in memory, with an ECDSA P-256 key), and binds to loopback unless a site
names a network interface. A client without the launch's certificate cannot connect, so
no other process can submit code to the workers.
"""

from __future__ import annotations

LOOPBACK = "127.0.0.1"


def launch_security():
    """Ephemeral mutual-TLS credentials for one launch's cluster (see the module docstring).
    Every scheduler, worker and client of the launch gets the same CA-signed certificate;
    ``require_encryption`` makes the comms refuse plain TCP.

    What ``distributed.security.Security.temporary()`` makes (a self-signed certificate
    for ``dask-internal``, valid one year, SHA-256 signature, in memory only), with an
    ECDSA P-256 key (FIPS 186-4; ~128-bit security, SP 800-57) instead of RSA-2048
    (~112-bit): generating the RSA key took 0.1-0.45 s of every launch's start, partly
    holding the GIL, the P-256 key ~0.2 ms."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    from distributed.security import Security

    key = ec.generate_private_key(ec.SECP256R1())
    key_pem = key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    ).decode()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dask-internal")])
    now = datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("dask-internal")]),
                       critical=False)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    return Security(
        require_encryption=True,
        tls_ca_file=cert_pem,
        tls_client_key=key_pem,
        tls_client_cert=cert_pem,
        tls_scheduler_key=key_pem,
        tls_scheduler_cert=cert_pem,
        tls_worker_key=key_pem,
        tls_worker_cert=cert_pem,
    )

"""A real S3-compatible server for the tests: moto's server mode on 127.0.0.1 and a free
port, with the environment a launch and its workers read (AWS_ENDPOINT_URL, credentials,
region). It speaks the S3 REST protocol over HTTP: s3fs, zarr's FsspecStore and the lease
lock talk to it exactly as to S3."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


S3_ENV_NAMES = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_DEFAULT_REGION", "AWS_EC2_METADATA_DISABLED")


@contextlib.contextmanager
def s3_server(bucket: str = "mbstudy-test") -> Iterator[str]:
    """Start moto's server, create ``bucket``, set the S3 environment variables (restored
    afterwards); yields the endpoint URL."""
    with s3_server_and_handle(bucket) as (endpoint, _):
        yield endpoint


@contextlib.contextmanager
def s3_server_and_handle(bucket: str = "mbstudy-test") -> Iterator[tuple[str, object]]:
    """:func:`s3_server`, yielding the endpoint URL and the server (``stop()`` it to lose
    the object store in the middle of a test)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in S3_ENV_NAMES}
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_EC2_METADATA_DISABLED": "true"})  # fmt: skip
    try:
        fs = s3fs_for(endpoint)
        fs.mkdir(bucket)
        yield endpoint, server
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def s3fs_for(endpoint: str):
    """A fresh synchronous s3fs file system on ``endpoint`` (no listings cache)."""
    import s3fs

    return s3fs.S3FileSystem(endpoint_url=endpoint, key="testing", secret="testing",
                             use_listings_cache=False, skip_instance_cache=True)  # fmt: skip

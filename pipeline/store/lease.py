"""The launch lock of a store on S3 (or an S3-compatible server): a lease object.

The lease is the object ``KEY.lock`` beside the store's prefix ``KEY`` (outside it, so that
``--overwrite`` cannot delete it), a small JSON document::

    {"holder": "<random id>", "pid": ..., "host": ..., "expires": <unix time>, "lease_s": 60}

Every write of it is a *conditional put* (RFC 9110 section 13.1; S3 PutObject with
``If-None-Match`` / ``If-Match``), which the server applies atomically:

1. **create**: ``PUT`` with ``If-None-Match: *`` succeeds only if no lease object exists;
2. **takeover**: otherwise read it (body and ETag); a lease whose ``expires`` is in the
   past is replaced by ``PUT`` with ``If-Match: <that ETag>``, which fails (412) if anyone
   wrote the object since it was read, so of many launches that find one expired lease at
   most one takes it; a live lease is refused with one line naming its holder;
3. **renewal**: a heartbeat thread rewrites the lease every ``lease_s / 3`` seconds with a
   new expiry, again with ``If-Match`` on the ETag of its own last write. A 412 means the
   lease was taken over (this launcher was paused longer than the lease): the lock is
   ``lost``, and the launch says so when it ends;
4. **release**: ``PUT`` of an already expired lease with ``If-Match`` (the object stays;
   a deletion could remove a lease someone took in between).

Limits (docs/explanation/reliability.md#the-launch-lock): expiry is the holder's wall clock read by
the taker's, so clocks must agree to well within the lease; a launcher paused (SIGSTOP,
a suspended laptop, a long GC) for more than the lease can lose it while its workers keep
writing (they write the same bytes as any other launch would: solvers are deterministic).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid

from mbstudy.pipeline.store.errors import StoreError

LEASE_SECONDS = 60.0


def lease_seconds() -> float:
    """The lease length: ``MBSTUDY_LEASE_SECONDS`` or :data:`LEASE_SECONDS`."""
    try:
        return max(1.0, float(os.environ.get("MBSTUDY_LEASE_SECONDS", LEASE_SECONDS)))
    except ValueError:
        raise StoreError("MBSTUDY_LEASE_SECONDS: expected a number of seconds") from None


class Conflict(Exception):
    """A conditional put refused by the server (HTTP 412: the precondition failed)."""


class LeaseLock:
    """An exclusive lease on ``location.url + '.lock'`` (an :class:`FsspecLocation` of the
    ``s3`` protocol), renewed by a heartbeat thread while held."""

    def __init__(self, location, lease_s: float | None = None) -> None:
        self.location = location
        bucket_key = f"{location.root}.lock"
        self.bucket, _, self.key = bucket_key.partition("/")
        if not self.key:
            raise StoreError(f"{location.url}: a store needs a key inside the bucket"
                             " (s3://BUCKET/NAME.zarr)")
        self.lease_s = float(lease_s) if lease_s is not None else lease_seconds()
        self.holder = uuid.uuid4().hex
        self.held = False
        self.lost = False
        self._etag: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- S3 requests
    def _put(self, body: dict, **condition) -> str:
        """PutObject with ``condition`` (IfNoneMatch / IfMatch); the new ETag."""
        try:
            out = self.location.fs.call_s3("put_object", Bucket=self.bucket, Key=self.key,
                                           Body=json.dumps(body).encode(), **condition)
        except Exception as exc:  # s3fs translates botocore's ClientError; look at both
            if _precondition_failed(exc):
                raise Conflict(str(exc)) from None
            raise StoreError(f"{self.location.url}.lock: cannot write the lease ({exc})"
                             ) from None
        return out["ETag"]

    def _get(self) -> tuple[dict, str] | None:
        """The lease and its ETag, or None if there is none."""
        try:
            out = self.location.fs.call_s3("get_object", Bucket=self.bucket, Key=self.key)
        except FileNotFoundError:
            return None
        except Exception as exc:
            if "NoSuchKey" in repr(exc) or "404" in repr(exc):
                return None
            raise StoreError(f"{self.location.url}.lock: cannot read the lease ({exc})"
                             ) from None
        data = out["Body"]
        raw = _read_body(self.location.fs, data)
        try:
            lease = json.loads(raw)
        except ValueError:
            lease = {}
        return (lease if isinstance(lease, dict) else {}), out["ETag"]

    def _body(self, expires: float) -> dict:
        return {"holder": self.holder, "pid": os.getpid(), "host": socket.gethostname(),
                "expires": expires, "lease_s": self.lease_s}  # fmt: skip

    # ---------------------------------------------------------------- the lock
    def acquire(self) -> LeaseLock:
        for _ in range(20):  # each round: someone else wrote the lease in between
            try:
                self._etag = self._put(self._body(time.time() + self.lease_s), IfNoneMatch="*")
                return self._held()
            except Conflict:
                pass
            found = self._get()
            if found is None:  # released by deletion in between: create again
                continue
            lease, etag = found
            if float(lease.get("expires", 0)) > time.time():
                until = time.strftime("%H:%M:%S", time.localtime(float(lease["expires"])))
                raise StoreError(
                    f"{self.location.url}: locked by another launch (pid {lease.get('pid')} on"
                    f" {lease.get('host')}, lease renewed until {until}); wait for it to finish"
                )
            try:
                self._etag = self._put(self._body(time.time() + self.lease_s), IfMatch=etag)
                return self._held()
            except Conflict:
                continue
        raise StoreError(f"{self.location.url}: could not take the lease lock")

    def _held(self) -> LeaseLock:
        self.held, self.lost = True, False
        self._stop.clear()
        self._thread = threading.Thread(target=self._heartbeat, name="mbstudy-lease",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        return self

    def renew(self) -> bool:
        """Extend the lease by ``lease_s`` (if-match our last write); False when lost."""
        try:
            self._etag = self._put(self._body(time.time() + self.lease_s), IfMatch=self._etag)
            return True
        except Conflict:
            self.lost = True
            return False

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                if not self.renew():
                    return
            except StoreError:  # the server unreachable for now: try again next beat
                continue

    def release(self) -> None:
        if not self.held:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if not self.lost:
            try:
                self._put(self._body(0.0), IfMatch=self._etag)
            except (Conflict, StoreError):
                pass
        self.held = False

    def __enter__(self) -> LeaseLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _read_body(fs, body) -> bytes:
    """Read an aiobotocore streaming body on s3fs's event loop."""
    from fsspec.asyn import sync

    async def read():
        async with body as stream:
            return await stream.read()

    return sync(fs.loop, read)


def _precondition_failed(exc: BaseException) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = repr(exc)
        if "PreconditionFailed" in text or "(412)" in text or "ConditionalRequestConflict" in text:
            return True
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        if code in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
            return True
        exc = exc.__cause__ or exc.__context__
    return False

"""Headless Chromium driven over the DevTools protocol (CDP), for tests of the HTML report.

No browser automation package: Chromium is started with ``--remote-debugging-port=0``, the
port is read from ``DevToolsActivePort`` in its profile directory, and the page target is
driven over a WebSocket with tornado (a dependency of distributed). The page is served
by a real HTTP server on 127.0.0.1 (canvas pixels of file:// pages cannot be read back).

``render(folder, page)`` loads the page, waits for it to settle and returns what a test
asserts on: console errors and uncaught exceptions, every request's URL, and per canvas
(including those in Bokeh's shadow roots) and image whether it was drawn (not blank).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,1000",
)  # fmt: skip

# walks the document and every shadow root; a canvas is drawn when its pixels are not all
# equal, an image when it loaded and its pixels are not all equal
PROBE = """(() => {
  const all = [];
  (function walk(root) {
    root.querySelectorAll('*').forEach(el => {
      if (el.tagName === 'CANVAS' || el.tagName === 'IMG') all.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    });
  })(document);
  function drawn(src, w, h) {
    if (!w || !h) return false;
    const c = document.createElement('canvas');
    c.width = Math.min(w, 600); c.height = Math.min(h, 600);
    const ctx = c.getContext('2d');
    ctx.drawImage(src, 0, 0, c.width, c.height);
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    for (let i = 4; i < d.length; i += 4)
      if (d[i] !== d[0] || d[i+1] !== d[1] || d[i+2] !== d[2] || d[i+3] !== d[3]) return true;
    return false;
  }
  return JSON.stringify(all.map(el => el.tagName === 'IMG'
    ? {kind: 'img', src: el.getAttribute('src'), ok: el.complete && el.naturalWidth > 0,
       drawn: el.complete && el.naturalWidth > 0 && drawn(el, el.naturalWidth, el.naturalHeight)}
    : {kind: 'canvas', w: el.width, h: el.height, drawn: drawn(el, el.width, el.height)}));
})()"""


@dataclass
class Rendered:
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    elements: list[dict] = field(default_factory=list)


def find_chromium() -> str | None:
    """Path of a Chromium (or Chrome) executable on PATH, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_required() -> bool:
    """The CI (``CI=true``) or the user (``MBSTUDY_REQUIRE_BROWSER=1``) wants a missing
    browser to fail the test instead of skipping it."""
    return os.environ.get("CI", "").lower() == "true" or os.environ.get(
        "MBSTUDY_REQUIRE_BROWSER", ""
    ) == "1"


@contextlib.contextmanager
def serve(folder: Path):
    """An HTTP server of ``folder`` on 127.0.0.1 (a free port); yields its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # the test reads requests from the browser
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def chromium(executable: str, timeout: float = 60.0):
    """A headless Chromium with a fresh profile; yields its DevTools HTTP base URL."""
    profile = tempfile.mkdtemp(prefix="mbstudy-chromium-")
    proc = subprocess.Popen(
        [executable, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{executable} did not start its DevTools endpoint")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


async def _drive(ws_url: str, url: str, settle: float, timeout: float) -> Rendered:
    from tornado.websocket import websocket_connect

    conn = await websocket_connect(ws_url, max_message_size=64 * 2**20)
    out = Rendered()
    counter = 0
    pending: dict[int, asyncio.Future] = {}
    loaded = asyncio.get_running_loop().create_future()

    async def reader():
        while True:
            msg = await conn.read_message()
            if msg is None:
                return
            m = json.loads(msg)
            if "id" in m and m["id"] in pending:
                pending.pop(m["id"]).set_result(m)
                continue
            method, params = m.get("method"), m.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.errors.append("console: " + " ".join(
                    str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = params.get("exceptionDetails", {})
                out.errors.append("exception: " + str(d.get("exception", {}).get(
                    "description", d.get("text"))))  # fmt: skip
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.errors.append("log: " + params["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                out.requests.append(params["request"]["url"])
            elif method == "Page.loadEventFired" and not loaded.done():
                loaded.set_result(True)

    async def call(method: str, **params):
        nonlocal counter
        counter += 1
        fut = asyncio.get_running_loop().create_future()
        pending[counter] = fut
        await conn.write_message(json.dumps({"id": counter, "method": method, "params": params}))
        return await asyncio.wait_for(fut, timeout)

    task = asyncio.ensure_future(reader())
    try:
        for domain in ("Runtime", "Log", "Page", "Network"):
            await call(f"{domain}.enable")
        nav = await call("Page.navigate", url=url)
        if "error" in nav or nav.get("result", {}).get("errorText"):
            raise RuntimeError(f"navigation to {url} failed: {nav}")
        deadline = time.monotonic() + timeout
        while not loaded.done():  # the load event, or the document says it is complete
            state = await call("Runtime.evaluate", returnByValue=True,
                               expression="document.readyState + ' ' + location.href")
            if state.get("result", {}).get("result", {}).get("value") == f"complete {url}":
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading in {timeout} s")
            await asyncio.sleep(0.2)
        await asyncio.sleep(settle)  # BokehJS renders after the load event
        res = await call("Runtime.evaluate", expression=PROBE, returnByValue=True)
        value = res.get("result", {}).get("result", {}).get("value")
        if value is None:
            out.errors.append(f"probe failed: {res}")
        else:
            out.elements = json.loads(value)
    finally:
        conn.close()
        task.cancel()
    return out


def render(executable: str, folder: Path, page: str = "index.html", settle: float = 5.0,
           timeout: float = 120.0) -> Rendered:  # fmt: skip
    """Load ``folder/page`` over HTTP in headless Chromium; see the module docstring."""
    with serve(folder) as base, chromium(executable, timeout) as devtools:
        with urllib.request.urlopen(f"{devtools}/json/list", timeout=timeout) as fh:
            targets = json.load(fh)
        ws = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
        return asyncio.run(_drive(ws, f"{base}/{page}", settle, timeout))

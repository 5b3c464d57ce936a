"""The README's screenshot of the Andrews report page (docs/figures/report_andrews.png).

From the repository root, as a new user would:

1. ``mbstudy launch studies/andrews.toml`` (the store ``results/andrews.zarr``; a complete
   store is skipped batch by batch, so a second run launches nothing);
2. ``mbstudy report results/andrews.zarr --out OUT`` (a temporary folder);
3. headless Chromium (Debian's ``chromium``) loads OUT/index.html at 1280 x 2000 CSS
   pixels, lets the page's scripts (BokehJS, inline) run for up to 15 s of virtual time
   and writes a PNG;
4. the PNG is cropped to its top ``--height`` pixels (the overlaid figures and the
   ranking) and reduced to 256 colours with Pillow, which keeps it far below 400 kB.

Not a benchmark: it lives here beside the other scripts that regenerate documentation
artefacts. Run:  python -m benchmarks.screenshot [--out PATH] [--height 1470]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

STUDY = "studies/andrews.toml"
STORE = "results/andrews.zarr"
WIDTH, HEIGHT = 1280, 2000


def mbstudy(*args: str) -> None:
    """Run ``mbstudy ARGS`` from the repository root with this interpreter."""
    cmd = [sys.executable, "-m", "mbstudy.pipeline.cli.app", *args]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[2:])} failed ({res.returncode}): {res.stderr[-2000:]}")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("no chromium on PATH (apt-get install chromium)")


def screenshot(page: Path, png: Path) -> None:
    """A headless Chromium screenshot of ``page`` (a local file) at WIDTH x HEIGHT."""
    with tempfile.TemporaryDirectory() as profile:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
               f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
               "--virtual-time-budget=15000", f"--screenshot={png}",
               page.resolve().as_uri()]  # fmt: skip
        subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if not png.exists():
        raise SystemExit(f"chromium wrote no screenshot of {page}")


def reduce(src: Path, dest: Path, height: int) -> None:
    """Crop ``src`` to its top ``height`` pixels and save it with a 256-colour palette."""
    from PIL import Image

    with Image.open(src) as img:
        top = img.convert("RGB").crop((0, 0, img.width, min(height, img.height)))
        top.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(dest, optimize=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures" / "report_andrews.png")
    ap.add_argument("--height", type=int, default=1470, help="pixels kept from the top")
    args = ap.parse_args()
    mbstudy("launch", STUDY, "--quiet")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report"
        mbstudy("report", STORE, "--out", str(report))
        raw = Path(tmp) / "raw.png"
        screenshot(report / "index.html", raw)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        reduce(raw, args.out, args.height)
    print(f"{args.out}: {args.out.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()

"""The conformance matrix: every (model, formulation, integrator) triple plan accepts, run
once and checked (mbstudy.pipeline.analysis.conformance), written to docs/reference/conformance.md.

Run from the repository root (interpreted engine: no compile, except the element
network's kernel; about a quarter of an hour on two cores)::

    python -m benchmarks.conformance                 # the full matrix ->
    docs/reference/conformance.md python -m benchmarks.conformance --subset ci     # the pairwise
    covering subset CI runs python -m benchmarks.conformance --model top --integrator genalpha   # a
    selection python -m benchmarks.conformance --known         # only the triples of known defects

A selection or the subset prints its verdicts and writes no page unless ``--out`` is
given; ``--json FILE`` writes every verdict with its checks. Exit 0 when every triple run
passes or fails only with a known defect, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=False)  # fmt: skip
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    from mbstudy.pipeline.analysis import conformance as c
    from mbstudy.pipeline.analysis.conformance_page import render_page, verdict_word

    ap = argparse.ArgumentParser(prog="python -m benchmarks.conformance",
                                 description=__doc__.split("\n\n")[0])  # fmt: skip
    ap.add_argument("--subset", choices=("full", "ci"), default="full")
    ap.add_argument("--model", action="append", help="only models with this label")
    ap.add_argument("--formulation", action="append")
    ap.add_argument("--integrator", action="append")
    ap.add_argument("--known", action="store_true", help="only triples of known defects")
    ap.add_argument("--workers", type=int, default=None, help="default: the available cores")
    ap.add_argument("--out", default=None, help="page to write (default for the full "
                                                "matrix: docs/reference/conformance.md)")
    ap.add_argument("--json", default=None, help="write every verdict to this file")
    args = ap.parse_args(argv)

    accepted, refused = c.matrix()
    triples = c.covering_subset(accepted) if args.subset == "ci" else accepted
    selected = bool(args.model or args.formulation or args.integrator or args.known)
    if args.model:
        triples = [t for t in triples if t.model.label in args.model]
    if args.formulation:
        triples = [t for t in triples if t.formulation in args.formulation]
    if args.integrator:
        triples = [t for t in triples if t.integrator in args.integrator]
    if args.known:
        triples = [t for t in triples if c.known_defect(t)]
    workers = args.workers or len(os.sched_getaffinity(0))
    print(f"{len(triples)} triple(s) of {len(accepted)} accepted ({len(refused)} refused), "
          f"{workers} worker(s)", flush=True)  # fmt: skip
    t0 = time.perf_counter()
    log = open(args.json + ".partial.pkl", "wb") if args.json else None

    def progress(done: int, v) -> None:
        if log:  # every verdict as it comes: a run stopped early is not lost
            pickle.dump(v, log)
            log.flush()
        if done % 50 == 0 or done == len(triples):
            print(f"  {done}/{len(triples)} done, {time.perf_counter() - t0:.0f} s",
                  flush=True)  # fmt: skip

    verdicts = c.run_many(triples, workers, progress)
    seconds = time.perf_counter() - t0
    for v in verdicts:
        if not v.passed:
            print(f"  {verdict_word(v):28s} {'/'.join(v.triple)}: {', '.join(v.failed)}")
    n_pass = sum(v.passed for v in verdicts)
    n_known = sum(1 for v in verdicts if not v.passed and v.known)
    n_other = len(verdicts) - n_pass - n_known
    print(f"{n_pass} pass, {n_known} fail with a known defect, {n_other} other failure(s);"
          f" {seconds:.0f} s")  # fmt: skip
    out = args.out or (None if selected or args.subset == "ci" else "docs/reference/conformance.md")
    if out:
        meta = {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "revision": _revision(), "seconds": seconds, "workers": workers,
                "command": "python -m benchmarks.conformance"
                + (" --subset ci" if args.subset == "ci" else "")}  # fmt: skip
        page = render_page(verdicts, refused if not selected else [], meta)
        page = page.replace(str(REPO) + os.sep, "")
        Path(out).write_text(page, encoding="utf-8")
        print(f"wrote {out}")
    if args.json:
        rows = [{"triple": list(v.triple), "passed": v.passed, "known": v.known,
                 "setting": v.setting, "seconds": round(v.seconds, 2), "figures": v.figures,
                 "checks": [ch.as_dict() for ch in v.checks]} for v in verdicts]  # fmt: skip
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str), encoding="utf-8")
    return 0 if n_other == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Search blocks against dense grids on the four-bar (docs/guide/search.md).

Three acceptance cases, each run as a search (pipeline/run/search.py, rounds on a
LocalCluster) and as the dense grid through the same worker task (run_search_cases,
the grid's run_one) on the same cluster:

1. edge: the Baumgarte + RK4 status boundary in (h, omega_n), h in [1e-4, 0.05] (log,
   snapped to 0.05/k), omega_n in [1, 2000] (log), xi = 1: a 64 x 64 dense grid against a
   15-line search; per search line the dense boundary at that omega_n is interpolated in
   log h over log omega_n between the two dense columns around it, and the error is
   |log10 h_search - log10 h_dense| (in decades, and as a percentage of log10 h_dense);
2. line: the same edge at omega_n = 200 along h alone, 256 dense values against a
   30-case search; the search's bracket is checked against the dense one;
3. gains: seed 004's best omega_o per h with DRCS (omega_n = 5, xi = 1, h = 0.02, 0.01,
   0.005, 0.0025, samples 51), omega_o in [5, 500] (log): 128 dense values per h against
   the minimize search; the argmin's distance in dense cells.

And the launcher's time per proposed case (proposing, reading and appending), measured
in the searches above and on a synthetic 10^4-case block.

Writes benchmarks/results/search.json and docs/figures/search_edge_cases.png.
Run:  python benchmarks/search.py [--workers 2] [--only gains ...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HEAD = """
[study]
name = "bench-search"
model = "fourbar"
t_end = 5.0
samples = {samples}
"""
EDGE = """
[[search]]
name = "edge"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
h = {{ log = [1e-4, 0.05] }}
omega_n = {{ log = [1.0, 2000.0] }}
goal = {{ boundary = "status" }}
budget = 400
"""
LINE = """
[[search]]
name = "line"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
omega_n = 200.0
h = {{ log = [1e-4, 0.05] }}
goal = {{ boundary = "status" }}
budget = 30
"""
GAINS = """
[[search]]
name = "gains"
formulation = "drcs"
integrator = "rk4"
omega_n = 5.0
xi = 1.0
h = [0.02, 0.01, 0.005, 0.0025]
omega_o = {{ log = [5.0, 500.0] }}
goal = {{ minimize = "rms_phi", tol = 0.01 }}
budget = 40
initial = 12
"""


def _spec(block: str, samples: int, store: Path):
    from mbstudy.pipeline.study import parse_study

    return parse_study(HEAD.format(samples=samples) + block.format()
                       + f'\n[output]\nstore = "{store}"\n')  # fmt: skip


def _dense(client, search, points: list[dict], workers: int):
    """Run every point through the search's worker task; (status, rms_phi, seconds)."""
    from mbstudy.pipeline.plan.search import case_params
    from mbstudy.pipeline.run.search import _split, run_search_cases

    cases = [case_params(search, "fourbar", (), p) for p in points]
    parts = _split(list(range(len(cases))), 4 * workers)
    t = time.perf_counter()
    res = client.gather([client.submit(run_search_cases, [cases[i] for i in part], pure=False)
                         for part in parts])  # fmt: skip
    wall = time.perf_counter() - t
    status = np.empty(len(cases), dtype=np.int8)
    rms = np.empty(len(cases))
    for part, r in zip(parts, res, strict=True):
        status[part] = r["status"]
        rms[part] = r["rms_phi"]
    return status, rms, wall


def _search(client, spec, store: Path):
    from mbstudy.pipeline.run.search import run_searches

    t = time.perf_counter()
    summary = run_searches(spec, store, client)
    wall = time.perf_counter() - t
    (block,) = summary.blocks.values()
    return block, wall, summary


def _edge_of_line(hs: np.ndarray, ok: np.ndarray) -> tuple[float, float] | None:
    """Last ok and first failed going up in h (sorted hs)."""
    for j in range(1, len(hs)):
        if ok[j - 1] and not ok[j]:
            return float(hs[j - 1]), float(hs[j])
    return None


def edge_case(client, workers: int, tmp: Path) -> dict:
    from mbstudy.solvers.status import OK

    spec = _spec(EDGE, 101, tmp / "edge.zarr")
    search = spec.searches[0]
    h_axis, w_axis = search.continuous
    hs = np.array([h_axis.from_unit(u) for u in np.linspace(0, 1, 64)])
    ws = np.array([w_axis.from_unit(u) for u in np.linspace(0, 1, 64)])
    points = [{"h": float(h), "omega_n": float(w)} for w in ws for h in hs]
    status, _, dense_wall = _dense(client, search, points, workers)
    ok = (status == OK).reshape(64, 64)
    uh = np.unique(hs)
    col_edge = []
    for i in range(64):
        okc = np.array([ok[i][np.where(hs == h)[0][0]] for h in uh])
        e = _edge_of_line(uh, okc)
        col_edge.append(math.sqrt(e[0] * e[1]) if e else np.nan)
    col_edge = np.array(col_edge)
    block, wall, summary = _search(client, spec, tmp / "edge.zarr")
    rows = []
    for p in block["answer"]:
        lw = math.log(p["omega_n"])
        j = int(np.searchsorted(np.log(ws), lw))
        j0, j1 = max(0, j - 1), min(63, j)
        a, b = col_edge[j0], col_edge[j1]
        if not (np.isfinite(a) and np.isfinite(b)):
            continue
        t = 0.0 if j1 == j0 else (lw - math.log(ws[j0])) / (math.log(ws[j1]) - math.log(ws[j0]))
        dense_h = math.exp((1 - t) * math.log(a) + t * math.log(b))
        err = abs(math.log10(p["h"]) - math.log10(dense_h))
        # the dense cell around the point: the brackets of the two columns around it
        cell_lo = min(_edge_of_line(uh, _col(ok, hs, uh, j0))[0],
                      _edge_of_line(uh, _col(ok, hs, uh, j1))[0])
        cell_hi = max(_edge_of_line(uh, _col(ok, hs, uh, j0))[1],
                      _edge_of_line(uh, _col(ok, hs, uh, j1))[1])  # fmt: skip
        rows.append({"omega_n": p["omega_n"], "h_search": p["h"], "lo": p["lo"], "hi": p["hi"],
                     "h_dense": dense_h, "err_decades": err,
                     "err_pct_of_log10h": 100 * err / abs(math.log10(dense_h)),
                     "inside_dense_cell": bool(cell_lo <= p["h"] <= cell_hi)})  # fmt: skip
    _figure(hs, ws, ok, tmp / "edge.zarr", rows)
    return {
        "dense_cases": len(points), "dense_wall_s": dense_wall,
        "search_cases": block["cases"], "search_rounds": block["rounds"], "search_wall_s": wall,
        "launcher_s_per_case": summary.propose_s / max(1, summary.cases_run),
        "points": len(block["answer"]), "points_compared": len(rows),
        "inside_dense_cell": sum(r["inside_dense_cell"] for r in rows),
        "max_err_decades": max(r["err_decades"] for r in rows),
        "max_err_pct_of_log10h": max(r["err_pct_of_log10h"] for r in rows),
        "rows": rows,
    }


def _col(ok, hs, uh, i):
    return np.array([ok[i][np.where(hs == h)[0][0]] for h in uh])


def _figure(hs, ws, ok, store: Path, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import zarr

    g = zarr.open_group(str(store), mode="r")["edge"]
    n = int(g.attrs["n"])
    sh, sw, st = (np.asarray(g[k][:n]) for k in ("h", "omega_n", "status"))
    fig, ax = plt.subplots(figsize=(7, 5))
    H, W = np.meshgrid(hs, ws)
    ax.scatter(W[ok], H[ok], s=3, c="#bbbbbb", label=f"dense grid ok ({ok.size} cases)")
    ax.scatter(W[~ok], H[~ok], s=3, c="#f2b6b6", label="dense grid failed")
    ax.scatter(sw[st == 0], sh[st == 0], s=12, c="tab:blue", marker="o",
               label=f"search ok ({n} cases)")  # fmt: skip
    ax.scatter(sw[st != 0], sh[st != 0], s=12, c="tab:red", marker="x", label="search failed")
    ax.plot([r["omega_n"] for r in rows], [r["h_search"] for r in rows], "k-", lw=1,
            label="search boundary")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("omega_n (rad/s)")
    ax.set_ylabel("h (s)")
    ax.set_title("four-bar, Baumgarte + RK4, xi = 1: status boundary")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    out = ROOT / "docs" / "figures" / "search_edge_cases.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)


def line_case(client, workers: int, tmp: Path) -> dict:
    from mbstudy.solvers.status import OK

    spec = _spec(LINE, 101, tmp / "line.zarr")
    search = spec.searches[0]
    (h_axis,) = search.continuous
    hs = sorted({h_axis.from_unit(u) for u in np.linspace(0, 1, 256)})
    status, _, dense_wall = _dense(client, search, [{"h": h} for h in hs], workers)
    dense = _edge_of_line(np.array(hs), status == OK)
    block, wall, summary = _search(client, spec, tmp / "line.zarr")
    (p,) = block["answer"]
    return {"dense_cases": len(hs), "dense_values_requested": 256, "dense_wall_s": dense_wall,
            "dense_bracket": dense, "search_cases": block["cases"],
            "search_rounds": block["rounds"], "search_wall_s": wall,
            "search_bracket": [p["lo"], p["hi"]],
            "inside_dense_cell": bool(dense[0] <= p["h"] <= dense[1]),
            "exact_bracket": bool([p["lo"], p["hi"]] == list(dense)),
            "launcher_s_per_case": summary.propose_s / max(1, summary.cases_run)}  # fmt: skip


def gains_case(client, workers: int, tmp: Path) -> dict:
    from mbstudy.solvers.status import OK

    spec = _spec(GAINS, 51, tmp / "gains.zarr")
    search = spec.searches[0]
    (w_axis,) = search.continuous
    ws = np.array([w_axis.from_unit(u) for u in np.linspace(0, 1, 128)])
    h_values = dict(search.lists)["h"]
    points = [{"omega_o": float(w), "h": h} for h in h_values for w in ws]
    status, rms, dense_wall = _dense(client, search, points, workers)
    rms = np.where(status == OK, rms, np.inf).reshape(len(h_values), 128)
    block, wall, summary = _search(client, spec, tmp / "gains.zarr")
    step = math.log(ws[1] / ws[0])
    # a fine line per h, 16 values per dense cell over the 8 dense cells on each side of
    # the dense argmin: the argmin of the metric where it is rough at the dense cell scale
    fine_u = {h: np.linspace(max(0.0, (j - 8) / 127), min(1.0, (j + 8) / 127), 257)
              for h, j in zip(h_values, np.argmin(rms, axis=1), strict=True)}  # fmt: skip
    fine_pts = [{"omega_o": float(w_axis.from_unit(u)), "h": h}
                for h in h_values for u in fine_u[h]]  # fmt: skip
    fst, frms, _ = _dense(client, search, fine_pts, workers)
    frms = np.where(fst == OK, frms, np.inf).reshape(len(h_values), 257)
    fine_w = np.array([p["omega_o"] for p in fine_pts]).reshape(len(h_values), 257)
    rows = []
    for p in block["answer"]:
        i = h_values.index(p["h"])
        j = int(np.argmin(rms[i]))
        k = int(np.argmin(frms[i]))
        cells = abs(math.log(p["omega_o"] / ws[j])) / step
        rows.append({"h": p["h"], "omega_o_search": p["omega_o"], "rms_phi_search": p["rms_phi"],
                     "omega_o_dense": float(ws[j]), "rms_phi_dense": float(rms[i, j]),
                     "cells_apart": cells,
                     "omega_o_fine": float(fine_w[i, k]), "rms_phi_fine": float(frms[i, k]),
                     "cells_from_fine": abs(math.log(p["omega_o"] / fine_w[i, k])) / step,
                     "dense_argmin_cells_from_fine":
                         abs(math.log(ws[j] / fine_w[i, k])) / step})  # fmt: skip
    return {"dense_cases": len(points), "dense_wall_s": dense_wall,
            "search_cases": block["cases"], "search_rounds": block["rounds"],
            "search_wall_s": wall, "within_one_cell": sum(r["cells_apart"] <= 1 for r in rows),
            "within_one_cell_of_fine": sum(r["cells_from_fine"] <= 1 for r in rows),
            "search_not_worse_than_dense": sum(r["rms_phi_search"] <= r["rms_phi_dense"]
                                               for r in rows),
            "fine_cases": len(fine_pts),
            "launcher_s_per_case": summary.propose_s / max(1, summary.cases_run),
            "rows": rows}  # fmt: skip


def overhead_case(tmp: Path) -> dict:
    """Launcher time per proposed case with 10^4 cases stored: a two-axis boundary of 400
    lines, every line's cases stored (synthetic outcomes: ok below h = 1/omega_n), one
    round proposed (read the rows, propose, build the cases) and appended."""
    from mbstudy.pipeline.plan.search import case_params, propose
    from mbstudy.pipeline.run.search import _axis_dtypes, search_observations
    from mbstudy.pipeline.store.search_block import SearchBlockStore, open_search_store

    block_text = EDGE.replace("budget = 400", "budget = 12400\nlines = 400\ninitial = 25")
    spec = _spec(block_text, 101, tmp / "over.zarr")
    search = spec.searches[0]
    root = open_search_store(tmp / "over.zarr", spec.text, spec.spec_hash)
    blk = SearchBlockStore.open_or_create(root, search, _axis_dtypes(search))
    pts = propose(search, [], search.budget)
    h = np.array([p["h"] for p in pts])
    w = np.array([p["omega_n"] for p in pts])
    status = np.where(h * w < 1.0, 0, 2).astype(np.int8)
    blk.append(0, {"h": h, "omega_n": w}, np.zeros(len(h), np.int32), status, {})
    t = time.perf_counter()
    per = search_observations(search, blk)
    new = propose(search, per[0], search.budget - len(per[0]))
    cases = [case_params(search, "fourbar", (), p) for p in new]
    k = len(cases)
    blk.append(1, {"h": np.array([p["h"] for p in new]),
                   "omega_n": np.array([p["omega_n"] for p in new])},
               np.zeros(k, np.int32), np.zeros(k, np.int8), {})  # fmt: skip
    s = time.perf_counter() - t
    return {"stored_cases": len(h), "proposed": k, "round_s": s, "s_per_proposed_case": s / k}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", choices=["line", "gains", "edge", "overhead"], action="append",
                    help="run only these cases (repeatable); the others keep their figures"
                         " in search.json")  # fmt: skip
    args = ap.parse_args()
    only = set(args.only or ["line", "gains", "edge", "overhead"])
    from mbstudy.pipeline.cluster.backends import open_client

    path = ROOT / "benchmarks" / "results" / "search.json"
    out: dict = json.loads(path.read_text()) if only != {"line", "gains", "edge", "overhead"} \
        and path.exists() else {}
    out.update({"workers": args.workers, "load_avg_start": os.getloadavg()})
    with tempfile.TemporaryDirectory() as d, open_client(workers=args.workers) as client:
        tmp = Path(d)
        # warm every kernel on every worker first (compile / cache load is not search time)
        _dense(client, _spec(LINE, 101, tmp / "w.zarr").searches[0], [{"h": 0.01}] * 4, 2)
        _dense(client, _spec(GAINS, 51, tmp / "w2.zarr").searches[0],
               [{"h": 0.01, "omega_o": 20.0}] * 4, 2)  # fmt: skip
        for name, case in (("line", line_case), ("gains", gains_case), ("edge", edge_case)):
            if name not in only:
                continue
            load = os.getloadavg()
            out[name] = case(client, args.workers, tmp)
            out[name]["load_avg_start"] = load
            print(name, json.dumps({k: v for k, v in out[name].items() if k != "rows"}),
                  flush=True)  # fmt: skip
        if "overhead" in only:
            out["overhead_1e4"] = overhead_case(tmp)
            print("overhead", json.dumps(out["overhead_1e4"]), flush=True)
    out["load_avg_end"] = os.getloadavg()
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Seed 004's section of docs/explanation/reproduction.md: every row of the seed's comparison that
our studies address (four-bar gains, step sizes, observer bandwidth; Andrews' squeezer),
ours beside the published value, with a verdict."""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.analysis import plots
from mbstudy.pipeline.analysis.aggregate import baseline_ratios, variation
from mbstudy.pipeline.analysis.repro_common import (
    FOURBAR_WHY,
    Doc,
    _g,
    _pct,
    _x,
    eps_q,
    pick,
    ratio,
)
from mbstudy.pipeline.store.zarr_store import ResultStore


# ---------------------------------------------------------------------------- seed 004
def _verdict(ours: float, published: float, kind: str) -> str:
    """reproduced when the direction agrees and the size is within a factor 2 (ratios)
    or half the published percentage (percent changes); else differs."""
    if not np.isfinite(ours):
        return "not computable (failed case)"
    if kind == "pct":
        same = np.sign(ours) == np.sign(published)
        close = abs(ours - published) <= 0.5 * abs(published)
    else:  # a factor > 1 in the stated direction
        same = ours > 1
        close = 0.5 <= ours / published <= 2
    if same and close:
        return "reproduced"
    return "differs: direction agrees, size does not" if same else "differs: opposite direction"


def combine(verdicts: list[str]) -> str:
    """One verdict for a row of several quantities (in order, duplicates merged)."""
    unique = list(dict.fromkeys(verdicts))
    if len(unique) == 1:
        return unique[0]
    return "differs: " + ", ".join(f"{i + 1}: {v}" for i, v in enumerate(verdicts))


def seed_004(doc: Doc, stores: dict[str, ResultStore | None]) -> None:
    doc.add(
        "## Seed 004: DRCS vs Baumgarte vs projection",
        "",
        "Every row of the seed's results our studies address: the published value beside ours "
        "(recomputed from the stores of `fourbar_gains`, `fourbar_steps`, "
        "`fourbar_bandwidth`, `andrews`). Percentages are DRCS relative to Baumgarte "
        "(ours: (DRCS / Baumgarte − 1)·100 %); factors are 'smaller' = Baumgarte / DRCS. "
        "Verdict rule: reproduced when the direction agrees and the size is within a "
        "factor 2 (half the percentage). Wall times are single runs (the seed: median "
        "of repeated runs). Why four-bar rows can differ: " + FOURBAR_WHY + ".",
        "",
    )
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import pack_params

    entry = solvers.model("fourbar")
    mask = entry.module.angle_mask(pack_params(entry.params, {}))
    nr, na = int((~mask).sum()), int(mask.sum())
    rows: list[dict] = []

    why = {"now": "four-bar data differ (docs/explanation/models.md#fourbar)"}

    def row(num, setting, quantity, published, ours, verdict):
        if verdict.startswith("differs (timing)"):
            verdict = "differs: single-run timings on a loaded, shared 2-core machine"
        elif verdict.startswith("differs"):
            verdict += f"; {why['now']}"
        rows.append(
            {
                "#": num,
                "setting": setting,
                "quantity": quantity,
                "published": published,
                "ours": ours,
                "verdict": verdict,
            }
        )

    gains = stores.get("fourbar_gains")
    steps = stores.get("fourbar_steps")
    band = stores.get("fourbar_bandwidth")
    andr = stores.get("andrews")
    if gains is not None:
        df = plots.cases(gains)
        b = pick(df, "baumgarte", omega_n=5, xi=1)
        d = pick(df, "drcs", omega_n=5, xi=1)
        for num, m, pub in (
            (1, "rms_phi", -24.8),
            (2, "e_r", -16.0),
            (3, "e_theta", -15.3),
            (4, "de_max", -17.2),
            (5, "e_dr", -17.7),
            (6, "e_dtheta", -18.6),
        ):
            r = ratio(d, b, m)
            row(
                num,
                "four-bar baseline",
                m,
                f"{pub:+.1f} %",
                _pct(r),
                _verdict((r - 1) * 100, pub, "pct"),
            )
        r = ratio(d, b, "rms_dphi")
        row(
            7,
            "four-bar baseline",
            "rms_dphi",
            "DRCS 3.64x larger",
            _x(r),
            _verdict(r, 3.64, "x"),
        )
        r = ratio(d, b, "wall_s")
        row(
            8,
            "four-bar baseline",
            "wall time",
            "DRCS 1.098x",
            _x(r),
            "reproduced" if np.isfinite(r) and 1.0 < r <= 1.35 else "differs (timing)",
        )
        pairs, _ = baseline_ratios(
            plots.without_row(df),
            "baumgarte",
            ["rms_phi", "e_r", "e_theta", "e_dr", "e_dtheta", "de_max"],
        )
        n = len(pairs)
        w = int((pairs["rms_phi_ratio"] < 1).sum())
        row(
            16,
            f"gains, {n} matched pairs",
            "rms_phi smaller",
            "22/24",
            f"{w}/{n}",
            "reproduced" if abs(w - 22) <= 2 else "differs",
        )
        wins = {
            m: int((pairs[f"{m}_ratio"] < 1).sum())
            for m in ("e_r", "e_theta", "e_dr", "e_dtheta", "de_max")
        }
        row(
            17,
            f"gains, {n} matched pairs",
            "e_r, e_θ, ė_r, ė_θ, ΔE smaller",
            "23/24 each",
            ", ".join(f"{v}/{n}" for v in wins.values()),
            "reproduced" if all(abs(v - 23) <= 2 for v in wins.values()) else "differs",
        )
        b5, d5 = pick(df, "baumgarte", omega_n=500, xi=1), pick(df, "drcs", omega_n=500, xi=1)
        r = ratio(b5, d5, "rms_phi")
        row(18, "ω_n = 500, ξ = 1", "rms_phi smaller", "≈41x", _x(r), _verdict(r, 41, "x"))
        r1, r2 = ratio(b5, d5, "e_r"), ratio(b5, d5, "e_theta")
        row(
            19,
            "ω_n = 500, ξ = 1",
            "e_r, e_θ smaller",
            "≈19x",
            f"{_x(r1)}, {_x(r2)}",
            _verdict(min(r1, r2), 19, "x"),
        )
        var = variation(df[np.isclose(df["xi"], 1.0)], "omega_n", ["rms_phi", "e_r", "e_theta"])
        vb = var[var["group"] == "baumgarte"].iloc[0]
        vd = var[var["group"] == "drcs"].iloc[0]
        row(
            20,
            "ξ = 1, over ω_n",
            "variation factor rms_phi (B / D)",
            "657 / 11.0",
            f"{_g(vb['rms_phi_max/min'])} / {_g(vd['rms_phi_max/min'])}",
            "reproduced" if vb["rms_phi_max/min"] > 5 * vd["rms_phi_max/min"] else "differs",
        )
        row(
            21,
            "ξ = 1, over ω_n",
            "variation factor e_r, e_θ (B / D)",
            "≈219 / ≈9.3",
            f"e_r {_g(vb['e_r_max/min'])} / {_g(vd['e_r_max/min'])}, e_θ "
            f"{_g(vb['e_theta_max/min'])} / {_g(vd['e_theta_max/min'])}",
            "reproduced" if vb["e_r_max/min"] > 5 * vd["e_r_max/min"] else "differs",
        )
        b20, d20 = pick(df, "baumgarte", omega_n=20, xi=1), pick(df, "drcs", omega_n=20, xi=1)
        r1, r2 = ratio(d20, b20, "e_r"), ratio(d20, b20, "e_theta")
        row(
            22,
            "ω_n = 20, ξ = 1",
            "e_r, e_θ DRCS larger",
            "≈2.18x",
            f"{_x(r1)}, {_x(r2)}",
            _verdict(min(r1, r2), 2.18, "x"),
        )
    if steps is not None:
        df = plots.cases(steps)
        d, p = pick(df, "drcs", h=0.0025), pick(df, "projection", h=0.0025)
        r1, r2 = ratio(d, p, "e_r"), ratio(d, p, "e_theta")
        row(
            9,
            "four-bar, h = 0.0025",
            "e_r, e_θ projection smaller",
            "3.67x, 3.65x",
            f"{_x(r1)}, {_x(r2)}",
            _verdict(min(r1, r2), 3.66, "x"),
        )
        r = ratio(d, p, "de_max")
        row(
            10,
            "four-bar, h = 0.0025",
            "ΔE_max projection smaller",
            "4.68x",
            _x(r),
            _verdict(r, 4.68, "x"),
        )
        r = ratio(p, d, "wall_s")
        row(
            11,
            "four-bar, h = 0.0025",
            "wall time projection / DRCS",
            "1.76x",
            _x(r),
            "reproduced" if np.isfinite(r) and 1.2 <= r <= 2.5 else "differs (timing)",
        )
        hs = sorted(df.loc[df["group"] == "drcs", "h"].unique(), reverse=True)
        pos, eq, vel, wall = [], [], [], []
        for h in hs:
            dd, bb = pick(df, "drcs", h=h), pick(df, "baumgarte", h=h)
            pos.append(ratio(dd, bb, "rms_phi") < 1)
            eq.append(eps_q(dd, nr, na) < eps_q(bb, nr, na))
            vel.append(ratio(dd, bb, "rms_dphi") > 1)
            wall.append(ratio(dd, bb, "wall_s"))
        hl = ", ".join(f"{h:g}" for h in hs)
        row(
            12,
            f"steps h = {hl}",
            "rms_phi DRCS smaller",
            "at all 5",
            f"at {sum(pos)}/{len(hs)}",
            "reproduced" if all(pos) else "differs",
        )
        row(
            13,
            f"steps h = {hl}",
            "ε_q DRCS smaller",
            "at 0.005, 0.0025, 0.00125",
            "at " + (", ".join(f"{h:g}" for h, e in zip(hs, eq, strict=True) if e) or "none"),
            "reproduced" if eq[-3:] == [True] * 3 and not any(eq[:-3]) else "differs",
        )
        row(
            14,
            f"steps h = {hl}",
            "rms_dphi DRCS larger",
            "at all 5",
            f"at {sum(vel)}/{len(hs)}",
            "reproduced" if all(vel) else "differs",
        )
        wl = [x for x in wall if np.isfinite(x)]
        row(
            15,
            f"steps h = {hl}",
            "wall time DRCS / Baumgarte",
            "+9.8 % to +26.1 %",
            (f"{(min(wl) - 1) * 100:+.1f} % to {(max(wl) - 1) * 100:+.1f} %" if wl else "n/a"),
            "reproduced" if wl and min(wl) > 1 else "differs (timing)",
        )
    if band is not None:
        df = plots.cases(band)
        dr = df[(df["group"] == "drcs") & np.isclose(df["h"], 0.0025) & (df["status"] == "ok")]
        if not dr.empty:
            best_p = dr.loc[dr["rms_phi"].idxmin(), "omega_o"]
            eq = [eps_q(r, nr, na) for _, r in dr.iterrows()]
            best_q = dr["omega_o"].iloc[int(np.nanargmin(eq))]
            row(
                23,
                "ω_n = 5, h = 0.0025",
                "best ω_o: rms_phi / ε_q",
                "50 / 20",
                f"{best_p:g} / {best_q:g}",
                "reproduced" if (best_p, best_q) == (50, 20) else "differs",
            )
        fails = df[(df["group"] == "drcs") & (df["status"] != "ok")]
        got = sorted((float(r["h"]), float(r["omega_o"]), r["status"]) for _, r in fails.iterrows())
        needed = {(0.02, 100.0), (0.01, 200.0)}
        have = {(h, o) for h, o, _ in got}
        row(
            25,
            "ω_n = 5",
            "failures (h, ω_o)",
            "(0.02, 100), (0.01, 200)",
            ", ".join(f"({h:g}, {o:g}) {s}" for h, o, s in got) or "none",
            "reproduced" + (" (plus more)" if have - needed else "")
            if needed <= have
            else "differs",
        )
    if stores.get("search:fourbar_gains_search") is not None:
        _search_rows(row, stores["search:fourbar_gains_search"])
    row(
        24,
        "ω_n = 100, ω_o = 10",
        "ε_q and ΔE_max vs Baumgarte",
        "≈⅓",
        "not in our studies",
        "not addressed (fourbar_bandwidth sweeps ω_o at ω_n = 5 only)",
    )
    if andr is not None:
        df = plots.cases(andr)
        for suffix, label, why_now in ANDREWS_RUNS:
            why["now"] = why_now
            _andrews_rows(row, df, suffix, label)
    import pandas as pd

    if rows:
        doc.table(pd.DataFrame(rows).sort_values("#", key=lambda c: c.map(_row_key)))
    doc.add(
        "Andrews rows: the plain numbers are dopri5 at rtol 1e-6, the rows marked b "
        "are `bdf` at rtol 1e-6, atol 1e-8 (variable-order NDF, the ode15s analogue; the "
        "seed's tolerances are lost in its text). For bdf, RHS evaluations include the "
        "N finite-difference residuals of every Jacobian (rhs + N·jac_evals, as ode15s "
        "counts its numerical Jacobians), and the Jacobian counts are compared as well.",
        "",
    )
    if stores.get("search:fourbar_gains_search") is not None:
        doc.add(SEARCH_NOTE, "")
    _seed_004_figures(doc, gains, steps, band, andr)


SEARCH_NOTE = (
    "Rows 23s and 25s: the search study `studies/fourbar_gains_search.toml` (DRCS, ω_n = 5, "
    "ξ = 1, rms_phi minimized over ω_o in [5, 500] per h; docs/guide/search.md) answers "
    "rows 23 and 25 between the grid's values: `fourbar_bandwidth` can only name one of its "
    "listed ω_o (row 23: 100 at h = 0.0025), the search places the optimum to 1 % of the "
    "log range (tol 0.01). Against a 4 x 128 dense grid (`python benchmarks/search.py "
    "--only gains`, figures in docs/guide/search.md) its rms_phi is below the dense "
    "minimum or within 0.002 % of it at every h; row 25s brackets the edge only as far "
    "as the minimization ran (the cases on each side of it, not a boundary search)."
)

# the Andrews rows 26-30 per integrator: (group suffix, row mark, why rows can differ)
ANDREWS_RUNS = (
    ("", "", "dopri5 at rtol 1e-6, not ode15s; Baumgarte gains not given"),
    ("_bdf", "b", "bdf at rtol 1e-6 (the ode15s analogue); Baumgarte gains not given"),
)


def _row_key(num) -> float:
    """Sort key of a row number: 26 < '26b' < 27 (and '23s', a search's row, after 23)."""
    text = str(num)
    return float(text.rstrip("bs")) + (0.5 if text[-1] in "bs" else 0.0)


def _search_rows(row, path) -> None:
    """Rows 23s and 25s from the search store of ``studies/fourbar_gains_search.toml``
    (docs/guide/search.md): DRCS at omega_n = 5, rms_phi minimized over omega_o in
    [5, 500] per h. 23s: the best omega_o per h (the cases' minimum; the grid's answer
    is limited to its omega_o list); 25s: per h, the largest omega_o that ran ok and the
    smallest that failed among the search's cases (the stability edge lies between)."""
    from mbstudy.pipeline.store.search_block import SearchBlockStore, read_search_root

    g = read_search_root(path)["best_omega_o"]
    rows = SearchBlockStore(g).rows()
    hs, w, st = rows.coords["h"], rows.coords["omega_o"], rows.status
    rms = np.where(st == 0, rows.metrics["rms_phi"], np.inf)
    levels = sorted(set(hs.tolist()), reverse=True)
    best, edges = [], []
    for h in levels:
        on = hs == h
        best.append(float(w[on][np.argmin(rms[on])]))
        ok, bad = w[on & (st == 0)], w[on & (st != 0)]
        edges.append((h, float(ok.max()) if ok.size else np.nan,
                      float(bad.min()) if bad.size else np.nan))  # fmt: skip
    cmd = "`mbstudy launch studies/fourbar_gains_search.toml`"
    at = dict(zip(levels, best, strict=True)).get(0.0025)
    row(
        "23s",
        "ω_n = 5, h = " + ", ".join(f"{h:g}" for h in levels) + f" (search, {rows.n} cases; {cmd})",
        "best ω_o: rms_phi",
        "50 (h = 0.0025)",
        " / ".join(f"{b:.3g}" for b in best),
        "reproduced" if at is not None and abs(np.log(at / 50)) <= np.log(2) else "differs",
    )
    needed = {0.02: 100.0, 0.01: 200.0}
    got = {h: b for h, _, b in edges}
    row(
        "25s",
        f"ω_n = 5 (search, {cmd})",
        "stability edge in ω_o per h (last ok, first failed)",
        "(0.02, 100), (0.01, 200) fail",
        ", ".join(f"h = {h:g}: ({a:.3g}, {b:.3g})" if np.isfinite(b)
                  else f"h = {h:g}: none failed up to {a:.3g}" for h, a, b in edges),
        "reproduced" if all(np.isfinite(got.get(h, np.nan)) and got[h] <= v
                            for h, v in needed.items()) else "differs",
    )


def _andrews_rows(row, df, suffix: str, mark: str) -> None:
    """Rows 26-30 (Andrews, DRCS vs Baumgarte) from the groups ``baumgarte{suffix}`` and
    ``drcs{suffix}``; nothing when the store has no such groups."""
    bs = df[df["group"] == "baumgarte" + suffix]
    if bs.empty:
        return
    b = bs.iloc[0]
    d1 = pick(df, "drcs" + suffix, omega_o=1000)
    d2 = pick(df, "drcs" + suffix, omega_o=100)
    rs_ = [ratio(b, d1, m) for m in ("rms_phi", "rms_dphi", "du_max")]
    pubs = (22.8, 18.5, 14.4)
    row(
        f"26{mark}",
        "Andrews, ω_o = 1000",
        "rms_phi / rms_dphi / max|ΔU| smaller",
        "22.8x / 18.5x / 14.4x",
        " / ".join(_x(r) for r in rs_),
        combine([_verdict(r, p, "x") for r, p in zip(rs_, pubs, strict=True)]),
    )
    r = ratio(d1, b, "input_rms")
    row(f"27{mark}", "Andrews, ω_o = 1000", "input RMS", "+6.8 %", _pct(r),
        _verdict((r - 1) * 100, 6.8, "pct"))  # fmt: skip
    r1, r2 = ratio(d1, b, "wall_s"), ratio(d1, b, "rhs_evals")
    quantity, ours = "wall time / RHS evaluations vs Baumgarte", f"{_x(r1)} / {_x(r2)}"
    if mark:
        r3 = ratio(d1, b, "jac_evals")
        quantity += " / Jacobians"
        ours += f" / {_x(r3)}"
    row(f"28{mark}", "Andrews, ω_o = 1000", quantity, "85.3x / 85.5x", ours,
        _verdict(r2, 85.5, "x"))  # fmt: skip
    r = ratio(d2, b, "rms_dphi")
    row(f"29{mark}", "Andrews, ω_o = 100", "rms_dphi", "−6.8 %", _pct(r),
        _verdict((r - 1) * 100, -6.8, "pct"))  # fmt: skip
    rr = [ratio(d2, b, m) for m in ("rms_phi", "du_max", "input_rms")]
    pubs = (19.6, 49.4, 80.2)
    row(
        f"30{mark}",
        "Andrews, ω_o = 100",
        "rms_phi / max|ΔU| / input RMS",
        "+19.6 % / +49.4 % / +80.2 %",
        " / ".join(_pct(r) for r in rr),
        combine([_verdict((r - 1) * 100, p, "pct") for r, p in zip(rr, pubs, strict=True)]),
    )


def _seed_004_figures(doc: Doc, gains, steps, band, andr) -> None:
    doc.add(
        "The seed's figures are not in its text (a text-only digest): the published "
        "numbers above stand in for them.",
        "",
    )
    if gains is not None:
        df = plots.cases(gains)
        for f in plots.line_figures(
            gains, df, ["rms_phi", "e_r"], "omega_n", "seed004_gains", slope=False
        ):
            doc.figure(f, f"Seed 004 gain sensitivity: {f.title} (lines per ξ)")
    if steps is not None:
        df = plots.cases(steps, ["baumgarte", "drcs", "projection"])
        for f in plots.ratio_figures(steps, df, "baumgarte", ["rms_phi", "e_r"], "h"):
            doc.figure(f, f"Seed 004 step study: {f.title}")
        for f in plots.work_precision_figures(steps, plots.cases(steps), ["e_r"], "rhs_evals"):
            doc.figure(
                f,
                "Four-bar work-precision over every formulation (RK4), cost in RHS evaluations "
                "(deterministic; wall times on this shared machine are noisy)",
            )
    if band is not None:
        df = plots.cases(band, ["drcs"])
        for f in plots.heatmap_figures(band, df, "rms_phi", "h", "omega_o"):
            doc.figure(f, "Seed 004 bandwidth study: failed cases hatched (row 25)")
    if andr is not None:
        df = plots.cases(andr)
        picks = [
            (
                r["group"],
                int(r["row"]),
                r["group"]
                + (
                    f" ω_o={r['omega_o']:g}"
                    if "omega_o" in r and np.isfinite(r.get("omega_o", np.nan))
                    else ""
                ),
            )
            for _, r in df.iterrows()
        ]
        doc.figure(
            plots.series_overlay(
                andr,
                picks,
                ["phi_norm", "dphi_norm", "energy_balance"],
                "seed004_andrews_series",
                "Andrews' squeezer, 0.03 s",
            ),
            "Andrews: constraint violation and energy balance",
        )

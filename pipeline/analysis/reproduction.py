"""docs/reproduction.md from the stores of the seed studies (``mbstudy reproduce``).

Each section recomputes its numbers from the stores (nothing is copied from earlier
sessions) and sets them beside the seed's claims:

- seed 001 (docs/hermite.md#properties): Hermite DVI order 2/3 vs RK4 on the two-link
  manipulator, energy error in the first vs the last 10 % of 100 s, constraint errors at
  the three levels, cost at h = 0.01 and 0.005; redraws the seed's figs. 9-10;
- seed 002: qr vs penalty vs augmented Lagrangian vs Baumgarte on the redundant
  parallelogram and the singular N four-bar; multipliers/reactions when the store has them;
- seed 003 (docs/elements.md#seed-inconsistencies): the worked example's step 3 through
  the project's own implicit step, and step control over delta_l from the spring-damper store;
- seed 004: every row our studies address, ours beside the published value, with a
  verdict.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from mbstudy.pipeline.analysis import plots
from mbstudy.pipeline.analysis.aggregate import baseline_ratios, render, variation
from mbstudy.pipeline.store.zarr_store import ResultStore

SEED_STUDIES: dict[str, tuple[str, ...]] = {
    "001": ("manipulator_hermite",),
    "002": ("redundant", "singular", "parallelogram", "nfourbar"),
    "003": ("spring_damper",),
    "004": ("fourbar_gains", "fourbar_steps", "fourbar_bandwidth", "andrews"),
}
FOURBAR_WHY = (
    "our four-bar data are not Marques et al.'s (docs/models.md#fourbar: lengths, masses, "
    "initial state unknown), so sizes of effects can differ"
)
REACTION_HINTS = ("lam", "reaction", "multiplier")


class Doc:
    """Markdown lines plus the figures they reference (written at the end)."""

    def __init__(self, fig_dir: Path) -> None:
        self.lines: list[str] = []
        self.figs: list[plots.Figure] = []
        self.fig_dir = fig_dir

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def table(self, df) -> None:
        self.lines += [render(df, "markdown"), ""]

    def figure(self, fig: plots.Figure, caption: str) -> None:
        self.figs.append(fig)
        self.lines += [f"![{caption}]({self.fig_dir.name}/{fig.name}.png)", "", f"*{caption}*", ""]


def _g(x: float, digits: int = 3) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}"


def half_ulp(printed: str) -> float:
    """Half a unit of the last printed digit of a decimal literal ('0.034' -> 5e-4)."""
    from decimal import Decimal

    return 0.5 * 10.0 ** Decimal(printed).as_tuple().exponent


def _x(r: float) -> str:
    return "n/a" if not np.isfinite(r) else f"{r:.3g}x"


def _pct(r: float) -> str:
    return "n/a" if not np.isfinite(r) else f"{(r - 1) * 100:+.1f} %"


def pick(df, group: str, **sel):
    """The one case of ``group`` whose axes equal ``sel`` (None if absent)."""
    sub = df[df["group"] == group]
    for k, v in sel.items():
        if k not in sub.columns:
            return None
        sub = sub[np.isclose(sub[k].astype(float), float(v), rtol=1e-9, atol=0)]
    return sub.iloc[0] if len(sub) == 1 else None


def ratio(a, b, metric: str) -> float:
    """a[metric] / b[metric] for two ok cases, else nan."""
    if a is None or b is None or a["status"] != "ok" or b["status"] != "ok":
        return float("nan")
    return float(a[metric]) / float(b[metric]) if b[metric] else float("nan")


def eps_q(row, n_trans: int, n_ang: int) -> float:
    """Coordinate RMS error over all coordinates (seed 004's epsilon_q) from the
    translational and angular RMS errors: sqrt((n_r e_r^2 + n_t e_theta^2) / n)."""
    if row is None or row["status"] != "ok":
        return float("nan")
    return math.sqrt((n_trans * row["e_r"] ** 2 + n_ang * row["e_theta"] ** 2) / (n_trans + n_ang))


def _open(results: Path, name: str) -> ResultStore | None:
    path = results / f"{name}.zarr"
    return ResultStore.open(path) if ResultStore.exists(path) else None


def _provenance(doc: Doc, stores: dict[str, ResultStore | None]) -> None:
    doc.add(
        "| study | store | complete | git revision | created | numba | cases ok / total |",
        "|---|---|---|---|---|---|---|",
    )
    for name, rs in stores.items():
        if rs is None:
            doc.add(f"| {name} | missing | | | | | |")
            continue
        a = rs.root_attrs()
        df = plots.cases(rs)
        doc.add(
            f"| {name} | `{rs.path.name}` | {a.get('complete')} | "
            f"`{str(a.get('git_revision'))[:10]}` | {a.get('created')} | "
            f"{(a.get('versions') or {}).get('numba')} | "
            f"{int((df['status'] == 'ok').sum())} / {len(df)} |"
        )
    doc.add("")


def _missing(doc: Doc, name: str) -> None:
    doc.add(
        f"*Store `{name}.zarr` is missing: run `mbstudy reproduce` (it launches "
        f"`studies/{name}.toml`).*",
        "",
    )


# ---------------------------------------------------------------------------- seed 001
def seed_001(doc: Doc, rs: ResultStore | None) -> None:
    doc.add(
        "## Seed 001: Hermite discrete variational integrator vs RK4 (manipulator)",
        "",
        "Study `studies/manipulator_hermite.toml`: two-link arm in absolute coordinates "
        "(docs/models.md#manipulator), Hermite DVI order 2 (two-point cubic) and 3 "
        "(three-point cubic) "
        "and unstabilized RK4 on the index-1 form, h = 0.01 and 0.005, over 20 s and 100 s. "
        "`de_first` / `de_last` are max |E - E0| over the first / last 10 % of the run "
        "(docs/hermite.md#properties 8). The seed's Tables 1-2 values are not in its text "
        "(only its claims survive), so the comparison is with its stated claims.",
        "",
    )
    if rs is None:
        return _missing(doc, "manipulator_hermite")
    df = plots.cases(rs)
    df["method"] = [
        ("H" + str(int(o)) if g.startswith("hermite") else "RK4")
        for g, o in zip(df["group"], df.get("order", np.nan), strict=True)
    ]
    df["t_end"] = [rs.block_attrs(g)["t_end"] for g in df["group"]]
    df["growth"] = df["de_last"] / df["de_first"]
    cols = [
        "method",
        "t_end",
        "h",
        "status",
        "de_first",
        "de_last",
        "growth",
        "de_max",
        "max_phi",
        "max_dphi",
        "max_ddphi",
        "steps",
        "newton_iters",
        "wall_s",
    ]
    doc.table(df[cols].sort_values(["t_end", "h", "method"]))
    long = df[df["t_end"] == df["t_end"].max()]
    verdicts = []
    for h in sorted(long["h"].unique()):
        sub = long[np.isclose(long["h"], h)]
        herm = sub[sub["method"] != "RK4"]
        rk = sub[sub["method"] == "RK4"]
        if herm.empty or rk.empty:
            continue
        hg = float(herm["growth"].max())
        rg = float(rk["growth"].iloc[0])
        ok = bool(np.isfinite(hg) and np.isfinite(rg) and rg > 3 * hg)
        verdicts.append(
            f"- h = {h:g}: Hermite energy error grows by at most {_g(hg)}x from "
            f"the first to the last 10 % of {long['t_end'].max():g} s, RK4 by "
            f"{_g(rg)}x; max |Φ| Hermite {_g(float(herm['max_phi'].max()))} vs RK4 "
            f"{_g(float(rk['max_phi'].iloc[0]))}. Seed: DVI energy bounded, RK4 "
            f"drifts. Verdict: **{'reproduced' if ok else 'differs'}**."
        )
        costs = ", ".join(
            f"{r['method']} {_g(r['wall_s'])} s ({int(r['steps'])} steps)"
            for _, r in sub.sort_values("method").iterrows()
        )
        verdicts.append(
            f"- cost at h = {h:g} over {long['t_end'].max():g} s (kernel wall "
            f"time, one run): {costs}."
        )
    h2h3 = long[long["method"] != "RK4"].pivot_table(index="h", columns="method", values="de_max")
    if {"H2", "H3"} <= set(h2h3.columns):
        rel = (h2h3["H3"] / h2h3["H2"]).to_numpy()
        verdicts.append(
            f"- two-point vs three-point: de_max(H3)/de_max(H2) = "
            f"{', '.join(_g(r) for r in rel)} at h = "
            f"{', '.join(f'{h:g}' for h in h2h3.index)} (seed: 'differ little')."
        )
    doc.add(*verdicts, "")
    t_long = long["t_end"].max()
    for h, fig_no in ((0.01, 9), (0.005, 10)):
        picks = []
        for _, r in long[np.isclose(long["h"], h)].sort_values("method").iterrows():
            picks.append((r["group"], int(r["row"]), r["method"]))
        if not picks:
            continue
        doc.figure(
            plots.series_overlay(
                rs,
                picks,
                ["energy"],
                f"seed001_fig{fig_no}_energy_h{h}",
                f"Total energy, h = {h:g}, {t_long:g} s (redraws seed 001 fig. {fig_no})",
            ),
            f"Seed 001 fig. {fig_no} redrawn: total energy of H2, H3 and RK4 at h = {h:g}",
        )
    picks = [
        (r["group"], int(r["row"]), r["method"])
        for _, r in long[np.isclose(long["h"], 0.01)].sort_values("method").iterrows()
    ]
    if picks:
        doc.figure(
            plots.series_overlay(
                rs,
                picks,
                list(plots.LEVELS),
                "seed001_constraints_h0.01",
                f"Constraint violation, h = 0.01, {t_long:g} s",
            ),
            "Constraint violation at the position, velocity and acceleration level",
        )
    doc.add(
        "Not redrawn: the seed's trajectory figures 2-3 and 6-8 need the end-point "
        "trajectories, and the study keeps only energy and constraint series.",
        "",
    )


# ---------------------------------------------------------------------------- seed 002
def _reaction_arrays(rs: ResultStore, group: str) -> list[str]:
    return [n for n in rs.array_names(group) if any(h in n.lower() for h in REACTION_HINTS)]


def seed_002(doc: Doc, stores: dict[str, ResultStore | None]) -> None:
    doc.add(
        "## Seed 002: QR null-space formulation vs augmented Baumgarte vs penalty",
        "",
        "Studies `redundant.toml` (parallelogram with a redundant crank, rank 11 of 12) "
        "and `singular.toml` (IFToMM A02 N four-bar through singular configurations), "
        "RK4 at h = 0.002 and 0.001, 2 s; `parallelogram.toml` and `nfourbar.toml` set "
        "the plain LU index-1 form against qr + dopri5. The seed gives only its abstract "
        "(docs/methods.md: seed 002 is an abstract): QR keeps the constraints at the three "
        "levels to machine "
        "precision and handles redundant and singular systems, where the augmented "
        "method needs special treatment.",
        "",
    )
    for name in ("redundant", "singular", "parallelogram", "nfourbar"):
        rs = stores.get(name)
        doc.add(f"### `{name}`", "")
        if rs is None:
            _missing(doc, name)
            continue
        df = plots.cases(rs)
        axes = [a for a in ("h", "rtol") if a in df.columns]
        cols = [
            "group",
            *axes,
            "status",
            "max_phi",
            "max_dphi",
            "max_ddphi",
            "rms_phi",
            "de_max",
            "rhs_evals",
            "wall_s",
        ]
        doc.table(df[[c for c in cols if c in df.columns]])
        if "h" in df.columns and name in ("redundant", "singular"):
            lines = []
            for h in sorted(df["h"].dropna().unique()):
                sub = df[np.isclose(df["h"].astype(float), h) & (df["status"] == "ok")]
                failed = df[np.isclose(df["h"].astype(float), h) & (df["status"] != "ok")]
                if sub.empty:
                    continue
                best = sub.loc[sub["max_phi"].idxmin(), "group"]
                lines.append(
                    f"- h = {h:g}: smallest max |Φ| {best} "
                    f"({_g(float(sub['max_phi'].min()))}); failed: "
                    + (
                        ", ".join(f"{r['group']} ({r['status']})" for _, r in failed.iterrows())
                        or "none"
                    )
                    + (
                        f". Verdict: **{'reproduced' if best == 'qr' else 'differs'}**"
                        " (QR most accurate)."
                    )
                )
            doc.add(*lines, "")
            h_fine = float(df["h"].min())
            picks = [
                (r["group"], int(r["row"]), f"{r['group']} [{r['status']}]")
                for _, r in df[np.isclose(df["h"].astype(float), h_fine)].iterrows()
            ]
            doc.figure(
                plots.series_overlay(
                    rs,
                    picks,
                    list(plots.LEVELS),
                    f"seed002_{name}_constraints",
                    f"{name}: constraint violation, h = {h_fine:g}",
                ),
                f"{name}: violation at the three levels, h = {h_fine:g}",
            )
        found = {g: _reaction_arrays(rs, g) for g in rs.blocks()}
        found = {g: v for g, v in found.items() if v}
        if not found:
            doc.add(
                "Reaction forces: **not in this store** (the studies were run before the "
                "multiplier/reaction arrays were added); regenerate with `mbstudy "
                "reproduce` once they are, and this section lists them.",
                "",
            )
            continue
        lam_cols = [c for c in ("lam_max", "lam_rms") if c in df.columns and df[c].notna().any()]
        doc.add(
            "Reaction forces from the constraint multipliers (arrays "
            + ", ".join(f"`{g}/{n}`" for g, v in found.items() for n in v)
            + "; M a + Φ_q^T λ = Q, by virtual power the rows of a revolute joint carry the "
            "reaction -λ on the body entering Φ with a + sign, docs/methods.md#multipliers; with "
            "redundant constraints λ is not unique and qr reports the minimum-norm "
            "one):",
            "",
        )
        if lam_cols:
            doc.table(df[["group", *axes, "status", *lam_cols]])
        series = [(g, "lam") for g, v in found.items() if "lam" in v]
        if series and "h" in df.columns:
            h_fine = float(df["h"].min())
            picks = [
                (r["group"], int(r["row"]), r["group"])
                for _, r in df[np.isclose(df["h"].astype(float), h_fine)].iterrows()
                if r["status"] == "ok" and (r["group"], "lam") in series
            ]
            if picks:
                doc.figure(
                    plots.series_overlay(
                        rs, picks, ["lam"], f"seed002_{name}_reactions", f"{name}: multipliers λ"
                    ),
                    f"{name}: constraint multipliers (reaction components), h = {h_fine:g}",
                )


# ---------------------------------------------------------------------------- seed 003
SEED3 = {
    "T2": 1.438e-3,
    "V2": 0.08509,
    "A2": 59.21,
    "DT3": 2.63e-3,
    "X2": 6.11e-5,
    "DELTA_L": 1e-3,
    "C": 0.8,
    "DELTA_F": 0.1,
    "DELTA_Z": 1e-3,
}
SEED3_PRINTED = [
    ("l_p3 (local error, rejected)", "0.034"),
    ("rho = delta_l / l", "0.03"),
    ("new dt3 (s)", "0.061e-3"),
    ("retry t3 (s)", "1.499e-3"),
    ("retry x3 (m)", "6.64e-5"),
    ("retry v3 (m/s)", "0.08862"),
    ("retry a3 (m/s^2)", "58.1"),
    ("next dt (s)", "0.264e-3"),
]


def worked_example_step3() -> list[float]:
    """Seed 003 step 3 through the project's implicit step (state before step 3:
    docs/elements.md#seed-inconsistencies); see :func:`solvers.worked_examples.seed003_step3`."""
    from mbstudy.pipeline.study.examples import studies_dir
    from mbstudy.solvers.worked_examples import seed003_step3

    return seed003_step3(
        studies_dir() / "networks" / "spring_damper.net",
        SEED3["T2"], SEED3["X2"], SEED3["V2"], SEED3["A2"], SEED3["DT3"],
        SEED3["DELTA_L"], SEED3["C"], SEED3["DELTA_F"], SEED3["DELTA_Z"],
    )  # fmt: skip


def seed_003(doc: Doc, rs: ResultStore | None) -> None:
    import pandas as pd

    doc.add(
        "## Seed 003: PRADIS worked example and step control",
        "",
        "Step 3 of the seed's spring-nonlinear damper-mass example (docs/models.md#network), "
        "computed by `solvers.elements.implicit.implicit_step` from the "
        "state before step 3 (x2 = 6.11e-5 inferred, docs/elements.md#seed-inconsistencies), "
        "delta_l = 0.001, "
        "c = 0.8, delta_f = 0.1, delta_z = 1e-3:",
        "",
    )
    ours = worked_example_step3()
    rows = []
    for (label, printed), val in zip(SEED3_PRINTED, ours, strict=True):
        dev = val / float(printed) - 1
        tol = half_ulp(printed) + 0.02 * abs(float(printed))
        rows.append(
            {
                "quantity": label,
                "seed": printed,
                "ours": f"{val:.5g}",
                "deviation": f"{dev * 100:+.2f} %",
                "verdict": "reproduced" if abs(val - float(printed)) <= tol else "differs",
            }
        )
    doc.table(pd.DataFrame(rows))
    doc.add(
        "Tolerance: half a unit of the printed digit plus 2 % (the seed's own "
        "inconsistencies, "
        "docs/elements.md): the seed's printed x3⁰ and the signs of f(z¹), f(z²) do not "
        "follow from its formulas; the next step 0.264e-3 follows c·dt·√ρ, not the "
        "stated 4c cap.",
        "",
    )
    doc.add("### Step control over delta_l (`studies/spring_damper.toml`)", "")
    if rs is None:
        return _missing(doc, "spring_damper")
    df = plots.cases(rs, ["implicit"])
    axes = plots.axes_of(rs, "implicit")
    cols = [*axes, "status", "steps", "rejected", "newton_iters", "e_final", "wall_s"]
    doc.table(df[cols])
    other = [a for a in axes if a != "delta_l"]
    lines = []
    for key, part in df.groupby(other) if other else [((), df)]:
        key = key if isinstance(key, tuple) else (key,)
        ok = part[part["status"] == "ok"]
        ps = plots.fitted_slope(ok["delta_l"], ok["steps"])
        pe = plots.fitted_slope(ok["delta_l"], ok["e_final"])
        lines.append(
            f"- {', '.join(f'{a} = {v:g}' for a, v in zip(other, key, strict=True))}"
            f": slope of log(steps) on log(delta_l) {ps:.2f} (step rule "
            f"dt ∝ delta_l^½ gives -0.5), of log(e_final) {pe:.2f}."
        )
    doc.add(*lines, "")
    for f in plots.line_figures(rs, df, ["steps", "e_final"], "delta_l", "seed003", slope=True):
        doc.figure(f, f"Seed 003 step control: {f.title}")


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
    from mbstudy.solvers import registry
    from mbstudy.solvers.spec import pack_params

    entry = registry.model("fourbar")
    mask = entry.module.angle_mask(pack_params(entry.params, {}))
    nr, na = int((~mask).sum()), int(mask.sum())
    rows: list[dict] = []

    why = {"now": "four-bar data differ (docs/models.md#fourbar)"}

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
    row(
        24,
        "ω_n = 100, ω_o = 10",
        "ε_q and ΔE_max vs Baumgarte",
        "≈⅓",
        "not in our studies",
        "not addressed (fourbar_bandwidth sweeps ω_o at ω_n = 5 only)",
    )
    if andr is not None:
        why["now"] = "dopri5 at rtol 1e-6, not ode15s; Baumgarte gains not given"
        df = plots.cases(andr)
        b = df[df["group"] == "baumgarte"].iloc[0]
        d1, d2 = pick(df, "drcs", omega_o=1000), pick(df, "drcs", omega_o=100)
        rs_ = [ratio(b, d1, m) for m in ("rms_phi", "rms_dphi", "du_max")]
        pubs = (22.8, 18.5, 14.4)
        row(
            26,
            "Andrews, ω_o = 1000",
            "rms_phi / rms_dphi / max|ΔU| smaller",
            "22.8x / 18.5x / 14.4x",
            " / ".join(_x(r) for r in rs_),
            combine([_verdict(r, p, "x") for r, p in zip(rs_, pubs, strict=True)]),
        )
        r = ratio(d1, b, "input_rms")
        row(
            27,
            "Andrews, ω_o = 1000",
            "input RMS",
            "+6.8 %",
            _pct(r),
            _verdict((r - 1) * 100, 6.8, "pct"),
        )
        r1, r2 = ratio(d1, b, "wall_s"), ratio(d1, b, "rhs_evals")
        row(
            28,
            "Andrews, ω_o = 1000",
            "wall time / RHS evaluations vs Baumgarte",
            "85.3x / 85.5x",
            f"{_x(r1)} / {_x(r2)}",
            _verdict(r2, 85.5, "x"),
        )
        r = ratio(d2, b, "rms_dphi")
        row(
            29,
            "Andrews, ω_o = 100",
            "rms_dphi",
            "−6.8 %",
            _pct(r),
            _verdict((r - 1) * 100, -6.8, "pct"),
        )
        rr = [ratio(d2, b, m) for m in ("rms_phi", "du_max", "input_rms")]
        pubs = (19.6, 49.4, 80.2)
        row(
            30,
            "Andrews, ω_o = 100",
            "rms_phi / max|ΔU| / input RMS",
            "+19.6 % / +49.4 % / +80.2 %",
            " / ".join(_pct(r) for r in rr),
            combine([_verdict((r - 1) * 100, p, "pct") for r, p in zip(rr, pubs, strict=True)]),
        )
    import pandas as pd

    if rows:
        doc.table(pd.DataFrame(rows).sort_values("#"))
    doc.add(
        "Andrews rows: our runs use dopri5 at rtol 1e-6 (the seed: MATLAB ode15s, "
        "tolerances lost in the seed's text), so the cost ratios measure a different "
        "integrator's response to the stiff ω_o³ observer gain.",
        "",
    )
    _seed_004_figures(doc, gains, steps, band, andr)


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


# ---------------------------------------------------------------------------- document
def write_reproduction(results: str | Path, out: str | Path) -> Path:
    """Write OUT/reproduction.md and OUT/figures/seed*.png from the stores in RESULTS."""
    results, out = Path(results), Path(out)
    fig_dir = out / "figures"
    doc = Doc(fig_dir)
    names = [s for group in SEED_STUDIES.values() for s in group]
    stores = {n: _open(results, n) for n in names}
    doc.add(
        "# Reproduction of the seeds' claims",
        "",
        "Generated by `mbstudy reproduce --out docs/ --results /tmp/repro` (it launches "
        "or resumes every study below into the results directory, then writes this page "
        "and `docs/figures/`). Every number is recomputed from the stores; nothing is "
        "copied. Stores are not committed.",
        "",
        "## Stores",
        "",
    )
    _provenance(doc, stores)
    seed_001(doc, stores["manipulator_hermite"])
    seed_002(doc, stores)
    seed_003(doc, stores["spring_damper"])
    seed_004(doc, stores)
    plots.save_figures(doc.figs, fig_dir, formats=("png",), dpi=72)
    path = out / "reproduction.md"
    path.write_text("\n".join(doc.lines).rstrip() + "\n", encoding="utf-8")
    return path

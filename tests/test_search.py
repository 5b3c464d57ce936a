"""Search blocks (docs/guide/search.md): parsing errors, real launches on a LocalCluster, resume
after a kill, and answers checked against independent references (the bracketing cases
run again directly, a dense line of every step the bracket could hold, a dense line of
the minimized gain)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.study import StudyError, parse_study
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import OK

HEAD = """
[study]
name = "s"
model = "fourbar"
t_end = 5.0
samples = 101
"""

LINE = HEAD + """
[[search]]
name = "line"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
omega_n = 200.0
h = { log = [0.001, 0.05] }
goal = { boundary = "status" }
budget = 30
"""

CURVE = HEAD + """
[[search]]
name = "edge"
formulation = "baumgarte"
integrator = "rk4"
xi = [1.0]
h = { log = [0.001, 0.05] }
omega_n = { log = [50.0, 1000.0] }
goal = { boundary = "status" }
lines = 4
budget = 120
"""


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mbstudy", *args], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())  # fmt: skip


def _study(tmp_path: Path, text: str, store: Path) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text + f'\n[output]\nstore = "{store}"\n')
    return path


# ------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("edit", "key", "words"),
    [
        (('goal = { boundary = "status" }', 'goal = { bondary = "status" }'),
         "search[0].goal.bondary", "unknown goal"),
        (('goal = { boundary = "status" }', 'goal = { minimize = "rms_phy" }'),
         "search[0].goal.minimize", "unknown metric"),
        (('goal = { boundary = "status" }', 'goal = { boundary = "rms_phi" }'), "search[0].goal.at",
         "needs the level"),
        (("budget = 30", "budget = 5"), "search[0].budget", "below"),
        (("xi = 1.0", "max_steps = { lin = [10, 20] }\nxi = 1.0"), "search[0].max_steps",
         "discrete parameter"),
        (("omega_n = 200.0", "omega_n = { log = [0.0, 5.0] }"), "search[0].omega_n.log", "> 0"),
        (("xi = 1.0", "xii = 1.0"), "search[0].xii", "unknown parameter"),
    ],
)
def test_bad_search_block_is_one_line_naming_the_key(edit, key, words):
    text = LINE.replace(*edit)
    assert text != LINE
    with pytest.raises(StudyError) as info:
        parse_study(text, source="s.toml")
    assert info.value.key == key
    assert words in info.value.message
    assert "\n" not in str(info.value)


def test_bad_block_on_the_command_line_exits_2_and_writes_nothing(tmp_path):
    store = tmp_path / "bad.zarr"
    path = _study(tmp_path, LINE.replace("budget = 30", "budget = 2"), store)
    res = _cli("launch", str(path), "--workers", "1")
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "search[0].budget" in res.stderr
    assert "Traceback" not in res.stderr
    assert not store.exists()


def test_fixed_step_h_bounds_are_snapped_to_divisors_of_the_output_interval():
    spec = parse_study(LINE.replace("[0.001, 0.05]", "[0.0013, 0.047]"))
    (h,) = spec.searches[0].continuous
    for v in (h.lo, h.hi, h.from_unit(0.37)):
        k = 0.05 / v
        assert abs(k - round(k)) < 1e-9
    assert h.lo <= 0.0013 and h.hi <= 0.047


# ------------------------------------------------------------------------ launches


def _dense_line_edge(omega_n: float) -> tuple[float, float]:
    """Every step h = 0.05/k in [0.001, 0.05] run directly: the last ok and first failed
    going up in h (the exact bracket a search may find)."""
    hs = sorted({0.05 / k for k in range(1, 51)})
    prev = None
    for h in hs:
        st = run_case("fourbar", "baumgarte", "rk4", t_end=5.0, samples=101,
                      formulation_params={"omega_n": omega_n, "xi": 1.0},
                      integrator_params={"h": h}).status  # fmt: skip
        if st != OK:
            return prev, h
        prev = h
    raise AssertionError("no failure on the dense line")


def test_line_search_brackets_the_dense_line_edge_exactly(tmp_path):
    store = tmp_path / "line.zarr"
    path = _study(tmp_path, LINE, store)
    res = _cli("launch", str(path), "--workers", "2")
    assert res.returncode == 0, res.stderr
    out = _cli("boundary", str(store), "line", "--json")
    assert out.returncode == 0, out.stderr
    points = json.loads(out.stdout)
    assert len(points) == 1
    (p,) = points
    assert set(p) == {"h", "lo", "hi"}
    lo, hi = _dense_line_edge(200.0)
    assert p["lo"] == pytest.approx(lo, rel=1e-9) and p["hi"] == pytest.approx(hi, rel=1e-9)
    assert p["lo"] < p["h"] < p["hi"]
    status = _cli("status", str(store))
    assert "rounds done" in status.stdout and "done" in status.stdout
    # a finished search is not rerun
    again = _cli("launch", str(path), "--workers", "2")
    assert again.returncode == 0 and "not rerun" in again.stdout
    import zarr

    g = zarr.open_group(str(store), mode="r")["line"]
    n = int(g.attrs["n"])
    assert n <= 30
    assert g["answer_lo"].attrs["long_name"].startswith("search answer")
    assert np.all(np.asarray(g["status"][:n]) >= 0)


def test_curve_search_killed_and_relaunched_ends_like_an_uninterrupted_one(tmp_path):
    whole = tmp_path / "whole.zarr"
    cut = tmp_path / "cut.zarr"
    res = _cli("launch", str(_study(tmp_path, CURVE, whole)), "--workers", "2")
    assert res.returncode == 0, res.stderr
    path = tmp_path / "cut.toml"
    path.write_text(CURVE + f'\n[output]\nstore = "{cut}"\n')
    cmd = [sys.executable, "-m", "mbstudy", "launch", str(path), "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    for line in proc.stdout:
        if "round 2" in line:  # two rounds written: kill without warning
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    import zarr

    partial = int(zarr.open_group(str(cut), mode="r")["edge"].attrs["n"])
    res = _cli("launch", str(path), "--workers", "2")
    assert res.returncode == 0, res.stderr
    a = zarr.open_group(str(whole), mode="r")["edge"]
    b = zarr.open_group(str(cut), mode="r")["edge"]
    n = int(a.attrs["n"])
    assert 0 < partial < n == int(b.attrs["n"])
    for name in ("h", "omega_n", "round", "status", "rms_phi"):
        np.testing.assert_array_equal(np.asarray(a[name][:n]), np.asarray(b[name][:n]))
    ja = json.loads(_cli("boundary", str(whole), "edge", "--json").stdout)
    jb = json.loads(_cli("boundary", str(cut), "edge", "--json").stdout)
    assert ja == jb and ja
    # every point: lo runs ok, hi fails (the bracketing cases run again directly)
    for p in ja:
        assert set(p) == {"h", "omega_n", "xi", "lo", "hi"}
        for h, want_ok in ((p["lo"], True), (p["hi"], False)):
            st = run_case("fourbar", "baumgarte", "rk4", t_end=5.0, samples=101,
                          formulation_params={"omega_n": p["omega_n"], "xi": p["xi"]},
                          integrator_params={"h": h}).status  # fmt: skip
            assert (st == OK) is want_ok


def test_minimize_finds_the_dense_line_minimum(tmp_path):
    text = HEAD.replace("samples = 101", "samples = 51") + """
[[search]]
name = "best"
formulation = "drcs"
integrator = "rk4"
omega_n = 5.0
xi = 1.0
h = [0.02]
omega_o = { log = [5.0, 500.0] }
goal = { minimize = "rms_phi" }
budget = 40
"""
    store = tmp_path / "best.zarr"
    res = _cli("launch", str(_study(tmp_path, text, store)), "--workers", "2")
    assert res.returncode == 0, res.stderr
    out = json.loads(_cli("aggregate", str(store), "--format", "json").stdout)
    (best,) = out["best"]
    from mbstudy.solvers import model_entry
    from mbstudy.solvers.metrics import compute_metrics
    from mbstudy.solvers.spec import pack_params

    entry = model_entry.model("fourbar")
    mask = np.asarray(entry.module.angle_mask(pack_params(entry.params, {})))
    dense = []
    for w in np.geomspace(5.0, 500.0, 33):
        r = run_case("fourbar", "drcs", "rk4", t_end=5.0, samples=51,
                     formulation_params={"omega_n": 5.0, "xi": 1.0, "omega_o": float(w)},
                     integrator_params={"h": 0.02})  # fmt: skip
        m = compute_metrics(r, None, mask)["rms_phi"]
        dense.append((m if r.status == OK else np.inf, float(w)))
    m_dense, w_dense = min(dense)
    # within one dense cell of the dense argmin; rms_phi is rough near its minimum (it
    # varies by about +-10 % between omega_o 1 % apart, next to the stability edge at
    # omega_o ~ 52), so the values agree to that roughness, not to rounding
    step = np.log(500.0 / 5.0) / 32
    assert abs(np.log(best["omega_o"] / w_dense)) <= step
    assert best["rms_phi"] <= 1.15 * m_dense
    assert all(m >= best["rms_phi"] for m, w in dense if abs(np.log(w / w_dense)) > 2 * step)


REFINE = HEAD + """
[[search]]
name = "conv"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
omega_n = 5.0
h = { log = [0.0005, 0.05] }
goal = { refine = "rms_phi" }
budget = 60
"""


def _refine_losses(h: np.ndarray, rms: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """python-adaptive's default loss of every interval between neighbouring stored h, computed
    here from the stored points: x = the unit coordinate of log h in [lo, hi], y = log10 rms_phi
    scaled to [0, 1] by its range (a failed case counts as the largest value), the loss the
    interval's length in the (x, y) plane (docs/guide/search.md)."""
    order = np.argsort(h)
    x = (np.log(h[order]) - np.log(lo)) / (np.log(hi) - np.log(lo))
    y = np.log10(np.abs(rms[order]))
    top = np.nanmax(y)
    y = np.where(np.isfinite(y), y, top)
    y = (y - y.min()) / (top - y.min())
    return np.hypot(np.diff(x), np.diff(y))


def test_refine_search_ends_with_every_loss_below_tol_and_resumes_to_the_same_cases(tmp_path):
    import zarr

    whole = tmp_path / "whole.zarr"
    res = _cli("launch", str(_study(tmp_path, REFINE, whole)), "--workers", "2")
    assert res.returncode == 0, res.stderr
    g = zarr.open_group(str(whole), mode="r")["conv"]
    n = int(g.attrs["n"])
    assert g.attrs["done"] and 8 < n < 60  # converged before the budget
    h = np.asarray(g["h"][:n])
    rms = np.where(np.asarray(g["status"][:n]) == OK, np.asarray(g["rms_phi"][:n]), np.nan)
    assert len(set(h.tolist())) == n  # no value run twice
    loss = _refine_losses(h, rms, 0.0005, 0.05)
    hs = np.sort(h)
    for j in np.flatnonzero(loss > 0.05):
        # an interval left above tol holds no other step: its midpoint in log h, snapped to
        # a divisor of the output interval 0.05 (h = 0.05 / ceil(0.05 / h)), is one of its ends
        mid = 0.05 / np.ceil(0.05 / np.sqrt(hs[j] * hs[j + 1]) - 1e-9)
        assert np.isclose(mid, hs[j], rtol=1e-9) or np.isclose(mid, hs[j + 1], rtol=1e-9)
    assert np.all(loss[hs[1:] < 0.005] <= 0.05)  # where the divisors are dense: all below
    # rms_phi of RK4 + Baumgarte falls with h: the refined curve is monotone where it ran ok
    ok = np.isfinite(rms[np.argsort(h)])
    assert np.all(np.diff(rms[np.argsort(h)][ok]) > 0)
    # killed after two rounds and launched again: the same cases in the same order
    cut = tmp_path / "cut.zarr"
    path = tmp_path / "cut.toml"
    path.write_text(REFINE + f'\n[output]\nstore = "{cut}"\n')
    cmd = [sys.executable, "-m", "mbstudy", "launch", str(path), "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    for line in proc.stdout:
        if "round 2" in line:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    proc.stdout.close()
    partial = int(zarr.open_group(str(cut), mode="r")["conv"].attrs["n"])
    res = _cli("launch", str(path), "--workers", "2")
    assert res.returncode == 0, res.stderr
    b = zarr.open_group(str(cut), mode="r")["conv"]
    assert 0 < partial < n == int(b.attrs["n"])
    for name in ("h", "round", "status", "rms_phi"):
        np.testing.assert_array_equal(np.asarray(g[name][:n]), np.asarray(b[name][:n]))


def test_minimize_keeps_a_second_basin_the_first_scan_ranks_below_the_best():
    """A narrow deep minimum (0.5 at u = 0.68) next to a scan point that is only the
    second-best local minimum of the first round (the best, 1.0 at u = 3/7, is in a wide
    shallow basin): zooming around the best point alone never leaves [2/7, 4/7]."""
    from mbstudy.pipeline.plan.search import Observation, answer, propose

    spec = parse_study(HEAD + """
[[search]]
name = "m"
formulation = "baumgarte"
integrator = "rk4"
h = 0.01
xi = 1.0
omega_n = { lin = [1.0, 2.0] }
goal = { minimize = "rms_phi", tol = 0.005 }
budget = 40
""")
    search = spec.searches[0]

    def f(w: float) -> float:
        u = w - 1.0
        return min(1.0 + 20 * (u - 3 / 7) ** 2, 0.5 + 600 * (u - 0.68) ** 2)

    obs: list[Observation] = []
    while new := propose(search, obs, search.budget - len(obs)):
        obs += [Observation(p, f(p["omega_n"])) for p in new]
    (best,) = answer(search, obs, {})
    assert len(obs) <= 40
    assert abs(best["omega_n"] - 1.68) < 0.005 and best["rms_phi"] < 0.5 + 600 * 0.005**2


def test_search_cases_store_the_studys_series_like_a_grid_case(tmp_path):
    """[output] series set: every search case stores its sampled series, (case, sample) and
    (case, sample, coord) arrays with the grid's meanings and units, equal to the same case
    run directly."""
    import zarr
    from mbstudy.solvers.metrics import SERIES_MEANINGS, SERIES_UNITS

    store = tmp_path / "ser.zarr"
    path = tmp_path / "study.toml"
    path.write_text(LINE + f'\n[output]\nstore = "{store}"\nseries = ["phi_norm", "q"]\n')
    res = _cli("launch", str(path), "--workers", "2")
    assert res.returncode == 0, res.stderr
    g = zarr.open_group(str(store), mode="r")["line"]
    n, cap = int(g.attrs["n"]), int(g.attrs["capacity"])
    assert list(g.attrs["series"]) == ["phi_norm", "q"]
    t = np.asarray(g["t"][:])
    np.testing.assert_allclose(t, np.linspace(0.0, 5.0, 101))
    assert g["phi_norm"].shape == (cap, 101) and g["q"].shape[:2] == (cap, 101)
    assert tuple(g["q"].metadata.dimension_names) == ("case", "sample", "coord")
    for name in ("phi_norm", "q"):
        assert g[name].attrs["long_name"] == SERIES_MEANINGS[name]
        assert g[name].attrs["units"] == SERIES_UNITS[name]
    h, status = np.asarray(g["h"][:n]), np.asarray(g["status"][:n])
    ok, bad = np.flatnonzero(status == OK), np.flatnonzero(status != OK)
    assert ok.size and bad.size
    for i in (ok[0], ok[-1], bad[0]):
        r = run_case("fourbar", "baumgarte", "rk4", t_end=5.0, samples=101,
                     formulation_params={"omega_n": 200.0, "xi": 1.0},
                     integrator_params={"h": float(h[i])})  # fmt: skip
        assert r.status == status[i]
        np.testing.assert_allclose(np.asarray(g["q"][i]), r.q, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(np.asarray(g["phi_norm"][i]), r.D[:, 0], rtol=1e-12,
                                   equal_nan=True)  # fmt: skip
    assert np.all(np.isnan(np.asarray(g["q"][n:])))  # rows not run stay NaN


def test_reproduction_rows_from_a_gains_search_store(tmp_path):
    """Rows 23s / 25s of the reproduction page from a search store of known cases: the best
    omega_o per h and the (last ok, first failed) omega_o per h, with the page's verdicts."""
    from mbstudy.pipeline.analysis.repro_seed004 import _search_rows
    from mbstudy.pipeline.run.search import _axis_dtypes
    from mbstudy.pipeline.store.search_block import SearchBlockStore, open_search_store

    text = (Path(__file__).resolve().parent.parent / "studies" / "fourbar_gains_search.toml"
            ).read_text().replace("results/fourbar_gains_search.zarr", str(tmp_path / "g.zarr"))
    spec = parse_study(text)
    search = spec.searches[0]
    root = open_search_store(tmp_path / "g.zarr", spec.text, spec.spec_hash)
    blk = SearchBlockStore.open_or_create(root, search, _axis_dtypes(search))
    #            h      omega_o status rms_phi
    cases = [(0.02, 10.0, 0, 2.0), (0.02, 20.0, 0, 1.0), (0.02, 40.0, 0, 3.0),
             (0.02, 60.0, 2, np.nan), (0.02, 90.0, 2, np.nan),
             (0.0025, 30.0, 0, 5.0), (0.0025, 70.0, 0, 4.0), (0.0025, 500.0, 0, 6.0)]
    h, w, st, r = (np.array(c) for c in zip(*cases, strict=True))
    blk.append(0, {"omega_o": w, "h": h}, np.zeros(len(h), np.int32), st.astype(np.int8),
               {"rms_phi": r})  # fmt: skip
    rows = []
    _search_rows(lambda *a: rows.append(a), tmp_path / "g.zarr")
    (n23, _, _, _, best, v23), (n25, _, _, _, edge, v25) = rows
    assert (n23, n25) == ("23s", "25s")
    assert best == "20 / 70"  # h = 0.02, then 0.0025
    assert v23 == "reproduced"  # 70 is within a factor 2 of the published 50
    assert edge == "h = 0.02: (40, 60), h = 0.0025: none failed up to 500"
    assert v25 == "differs"  # no case at h = 0.01: the second published failure is not seen

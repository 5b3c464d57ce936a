"""The kernel workspaces are read by named slots (solvers/workspace.py and the
formulations' own ``*_INDEX1``... constants), never by a bare position."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from mbstudy.solvers import workspace
from mbstudy.solvers.compose import kernel_module
from mbstudy.solvers.workspace import (
    WS_A,
    WS_DPHI,
    WS_GAMMA,
    WS_K,
    WS_LAM,
    WS_M,
    WS_PHI,
    WS_PHI_Q,
    WS_PIV,
    WS_Q,
    WS_R,
    WS_SLOTS,
    WS_TMP,
    WS_U,
)

SOLVERS = Path(__file__).resolve().parent.parent / "solvers"
N, M_ = 5, 3


def _index1_shapes(n, m):
    return {
        WS_M: (n, n), WS_Q: (n,), WS_PHI_Q: (m, n), WS_GAMMA: (m,), WS_K: (n + m, n + m),
        WS_R: (n + m,), WS_PIV: (n + m + 1,), WS_PHI: (m,), WS_DPHI: (m,), WS_U: (m,),
        WS_A: (n,), WS_LAM: (m,), WS_TMP: (n,),
    }


def test_slots_are_a_permutation_of_the_positions():
    slots = [v for k, v in vars(workspace).items() if k.startswith("WS_") and k != "WS_SLOTS"]
    assert sorted(slots) == list(range(WS_SLOTS))


def test_common_alloc_matches_the_named_slots():
    # py_func: the generated Python function, no compile
    ws = kernel_module("fourbar", "none", "rk4").common_alloc.py_func(N, M_)
    assert len(ws) == WS_SLOTS
    for slot, shape in _index1_shapes(N, M_).items():
        assert ws[slot].shape == shape, slot
    assert ws[WS_PIV].dtype == np.int64


@pytest.mark.parametrize(
    ("formulation", "slots"),
    [
        ("qr", {"QRW_QC": (N,), "QRW_VC": (N,), "QRW_A": (N, M_), "QRW_TAU": (M_,),
                "QRW_PERM": (M_,), "QRW_Q2": (N, N), "QRW_T": (N, N), "QRW_X1": (N,),
                "QRW_X2": (N,), "QRW_XM": (M_,), "QRW_ZERO_M": (M_,), "QRW_INFO": (2,)}),
        ("projection", {"PROJ_GRAM": (M_, M_), "PROJ_BUF": (M_,)}),
        ("penalty", {"PEN_A": (N, N), "PEN_B": (N,), "PEN_ZERO_M": (M_,)}),
        ("auglag", {"AL_A": (N, N), "AL_B": (N,), "AL_A_PREV": (N,), "AL_LAM_STAR": (M_,),
                    "AL_NIT": (1,)}),
    ],
)
def test_nested_workspaces_match_their_named_slots(formulation, slots):
    mod = kernel_module("fourbar", formulation, "rk4")
    ws = mod.form_alloc.py_func(N, M_, np.zeros(8))
    prefix = next(iter(slots)).split("_")[0]
    inner = ws[getattr(mod, f"{prefix}_INDEX1")]
    for slot, shape in _index1_shapes(N, M_).items():
        assert inner[slot].shape == shape
    nested = {"qr": ("QRW_SING",)}.get(formulation, ())  # nested workspaces, tested below
    assert len(ws) == len(slots) + 1 + len(nested)
    for name, shape in slots.items():
        assert ws[getattr(mod, name)].shape == shape, name


def test_qr_window_workspace_matches_its_named_slots():
    """qr's E3-window workspace (solvers/formulations/_qr_singular.py, slot QRW_SING):
    one array per SW_* slot, with the documented shape."""
    mod = kernel_module("fourbar", "qr", "rk4")
    sw = mod.form_alloc.py_func(N, M_, np.zeros(8))[mod.QRW_SING]
    n, m = N, M_
    shapes = {
        "SW_Z": (m, m), "SW_S": (m,), "SW_V": (n, n), "SW_D": (m, n), "SW_JT": (m, n),
        "SW_G3": (m,),
        "SW_GA": (m,), "SW_GB": (m,), "SW_C": (n, n), "SW_PIV": (n,), "SW_B": (n, n),
        "SW_BP": (n, n), "SW_BM": (n, n), "SW_AE": (n,), "SW_AP": (n,), "SW_AM": (n,),
        "SW_J1": (n,), "SW_A2": (n,), "SW_E": (n, n), "SW_QH": (n,), "SW_VH": (n,),
        "SW_QS": (n,), "SW_VS": (n,), "SW_X1": (n,), "SW_X2": (n,), "SW_XM": (m,),
        "SW_XM2": (m,), "SW_M": (n, n), "SW_Q": (n,), "SW_Y": (n,), "SW_QT": (n,),
        "SW_AF": (n,), "SW_INFO": (2,), "SW_QF": (n,), "SW_VF": (n,), "SW_ZC": (m, m),
        "SW_SC": (m,), "SW_VC": (n, n),
    }  # fmt: skip
    assert len(sw) == len(shapes)
    assert sorted(getattr(mod, k) for k in shapes) == list(range(len(shapes)))
    for name, shape in shapes.items():
        assert sw[getattr(mod, name)].shape == shape, name
    assert sw[mod.SW_PIV].dtype == np.int64


def _bare_workspace_indices(path: Path) -> list[str]:
    """``ws[9]``-style reads: a subscript of a name containing 'w' by an int literal."""
    tree = ast.parse(path.read_text())
    hits = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("ws", "w")
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            hits.append(f"{path.name}:{node.lineno}")
    return hits


def test_the_bare_index_check_finds_a_bare_index(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def form_rhs(ws):\n    return ws[9]\n")
    assert _bare_workspace_indices(bad) == ["bad.py:2"]


def test_no_template_reads_a_workspace_by_a_bare_position():
    paths = sorted((SOLVERS / "formulations").glob("*.py"))
    paths += sorted((SOLVERS / "integrators").glob("*.py"))
    hits = [h for p in paths for h in _bare_workspace_indices(p)]
    assert hits == []

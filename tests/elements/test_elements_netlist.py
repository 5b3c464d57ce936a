"""Netlist format (seed 003 §2.9): parsing, and errors located by file and line."""

from __future__ import annotations

import math

import elements_testkit as kit
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mbstudy.solvers.elements import ELEMENT_TYPES, NetlistError, load_netlist, parse_netlist

SEED_FRAGMENT = """$ FRAGMENT: Пример
# BASE: 1
# STRUCTURE:
Пружина' K (1 2; 20000)
Нелинейный демпфер ' MUNL (1 2; 1000)
Масса ' M (2; 0.1)
Воздействие ' FSIN (2 1; 1000, 0.2*pi, 0)
"""


def test_seed_fragment() -> None:
    nl = parse_netlist(SEED_FRAGMENT)
    assert nl.fragment == "Пример"
    assert nl.base == ("1",)
    assert [el.name for el in nl.elements] == ["Пружина", "Нелинейный демпфер", "Масса",
                                               "Воздействие"]
    assert [el.code for el in nl.elements] == ["K", "MUNL", "M", "FSIN"]
    assert [el.nodes for el in nl.elements] == [("1", "2"), ("1", "2"), ("2",), ("2", "1")]
    assert nl.elements[3].params == (1000.0, pytest.approx(0.2 * math.pi), 0.0)
    assert [el.line for el in nl.elements] == [4, 5, 6, 7]
    assert nl.free_nodes == ("2",)


def test_example_files_parse() -> None:
    for path in sorted(kit.NETWORKS.glob("*.net")):
        nl = load_netlist(path)
        assert nl.filename == str(path) and nl.elements
    def strip(nl):
        return [(el.name, el.code, el.nodes, el.params) for el in nl.elements]

    assert strip(load_netlist(kit.NETWORKS / "spring_damper.net")) == \
        strip(parse_netlist(SEED_FRAGMENT))


def test_named_parameters_defaults_comments_and_initial_values() -> None:
    nl = parse_netlist(
        "# BASE: g  ! the frame\n"
        "# STRUCTURE:\n"
        "drive ' TSIN (1 g; T = 2*pi, Q = sqrt(4))   ! phase defaults to 0\n"
        "rotor ' J (1; 0.5)\n"
        "# INITIAL:\n"
        "1 (v = -3)\n"
    )
    assert nl.elements[0].params == (2.0, pytest.approx(2 * math.pi), 0.0)
    (iv,) = nl.initial
    assert (iv.node, iv.x, iv.v, iv.line) == ("1", 0.0, -3.0, 6)


def test_error_string_is_one_line_file_colon_line(tmp_path) -> None:
    path = tmp_path / "bad.net"
    path.write_text("# BASE: 1\n# STRUCTURE:\nspring ' KK (1 2; 1)\nm ' M (2; 1)\n",
                    encoding="utf-8")
    with pytest.raises(NetlistError) as info:
        load_netlist(path)
    err = info.value
    assert (err.filename, err.line_no) == (str(path), 3)
    assert str(err) == f"{path}:3: {err.message}"
    assert "\n" not in str(err)
    assert "unknown element 'KK'" in err.message and "'K'" in err.message  # suggestion


HEAD = "# BASE: 0\n# STRUCTURE:\n"  # element lines start at line 3
OK_MASS = "m ' M (1; 1)\n"


@pytest.mark.parametrize(
    ("body", "line", "needle"),
    [
        ("k ' Q (0 1; 1)\n" + OK_MASS, 3, "unknown element 'Q'"),
        (OK_MASS + "k ' K (1; 5)\n", 4, "missing node"),
        (OK_MASS + "k ' K (0 1 2; 5)\n", 4, "too many nodes"),
        (OK_MASS + "m ' K (0 1; 5)\n", 4, "duplicate element name 'm' (first on line 3)"),
        (OK_MASS + "k ' K (0 1; 5)\nf ' FCON (2 0; 1)\n", 5, "floating node '2'"),
        (OK_MASS + "k1 ' K (2 3; 5)\nf ' FCON (2 0; 1)\n", 4, "floating node '2'"),
        (OK_MASS + "k ' K (1 1; 5)\n", 4, "connects node '1' to itself"),
        (OK_MASS + "k ' K (0 1)\n", 4, "missing parameter 'k'"),
        (OK_MASS + "k ' K (0 1; 1, 2)\n", 4, "takes 1 parameter(s)"),
        (OK_MASS + "k ' K (0 1; stiff = 1)\n", 4, "has no parameter 'stiff'"),
        (OK_MASS + "f ' FSIN (0 1; T = 1, 2)\n", 4, "positional parameter after a named one"),
        (OK_MASS + "k ' K (0 1; k = 1, k = 2)\n", 4, "given twice"),
        (OK_MASS + "k ' K (0 1; 2 ^ 3)\n", 4, "is not a number"),
        (OK_MASS + "k ' K (0 1; __import__('os'))\n", 4, "is not a number"),
        (OK_MASS + "r ' R (0 1; -5)\n", 4, "must be a number > 0"),
        ("m ' M (1; 0)\n", 3, "must be a number > 0"),
        (OK_MASS + "k K (0 1; 5)\n", 4, "cannot read element line"),
        (OK_MASS + "' K (0 1; 5)\n", 4, "has no name"),
        (OK_MASS + "k ' K 0 1; 5\n", 4, "expected '(NODES; PARAMS)'"),
        (OK_MASS + "# FOO:\n", 4, "unknown directive '# FOO:'"),
        (OK_MASS + "# STRUCTURE:\n", 4, "second '# STRUCTURE:'"),
        (OK_MASS + "k ' K (0 0; 5)\n", 4, "connects node '0' to itself"),
        (OK_MASS + "k ' K (0 1; 1)\n# INITIAL:\n0 (x = 1)\n", 6, "BASE node '0'"),
        (OK_MASS + "k ' K (0 1; 1)\n# INITIAL:\n7 (x = 1)\n", 6, "unknown node '7'"),
        (OK_MASS + "# INITIAL:\n1 (y = 1)\n", 5, "expected x = VALUE or v = VALUE"),
    ],
)
def test_errors_carry_the_line(body: str, line: int, needle: str) -> None:
    with pytest.raises(NetlistError) as info:
        parse_netlist(HEAD + body, "net.net")
    assert info.value.line_no == line, str(info.value)
    assert needle in info.value.message, str(info.value)
    assert str(info.value).startswith(f"net.net:{line}: ")


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("k ' K (0 1; 1)\n", 1, "element line before '# STRUCTURE:'"),
        ("# BASE: 0\n", 1, "no '# STRUCTURE:' section"),
        ("# BASE: 0\n# STRUCTURE:\n\n", 3, "no elements"),
        ("# BASE: 0 5\n# STRUCTURE:\nm ' M (1; 1)\nk ' K (0 1; 1)\n", 1,
         "BASE node '5' is not used"),
        ("# BASE: 0 0\n# STRUCTURE:\nm ' M (1; 1)\n", 1, "listed twice"),
        ("# BASE: 0 9\n# STRUCTURE:\nm ' M (1; 1)\nf ' FCON (0 9; 1)\n", 4,
         "connects only BASE nodes"),
        ("$ FRAGMENT: a\n$ FRAGMENT: b\n", 2, "second '$ FRAGMENT:'"),
        ("$ TITLE: a\n", 1, "unknown directive '$ TITLE:'"),
    ],
)
def test_file_level_errors(text: str, line: int, needle: str) -> None:
    with pytest.raises(NetlistError) as info:
        parse_netlist(text)
    assert (info.value.line_no, needle in info.value.message) == (line, True), str(info.value)


def test_inertia_or_base_path_is_not_floating() -> None:
    # free-free: two masses joined by a spring, no BASE at all
    parse_netlist("# STRUCTURE:\nm1 ' M (a; 1)\nk ' K (a b; 1)\nm2 ' M (b; 2)\n")
    # a massless node between two springs is held by the spring path to BASE
    parse_netlist("# BASE: 0\n# STRUCTURE:\nk1 ' K (0 1; 1)\nk2 ' K (1 2; 1)\nm ' M (2; 1)\n")


# --- property: to_text round-trips every valid chain network ---------------------------

_PASSIVE = [c for c, et in ELEMENT_TYPES.items() if et.n_nodes == 2 and not et.source]
_SOURCES = [c for c, et in ELEMENT_TYPES.items() if et.source]


@st.composite
def chain_netlists(draw):
    n = draw(st.integers(1, 4))
    lines = ["# BASE: 0", "# STRUCTURE:"]
    for i in range(1, n + 1):
        code = draw(st.sampled_from(_PASSIVE))
        et = ELEMENT_TYPES[code]
        vals = [draw(st.floats(0.1, 1e3)) for _ in et.params]
        lines.append(f"e{i} ' {code} ({i - 1} {i}; {', '.join(repr(v) for v in vals)})")
        if draw(st.booleans()):
            src = draw(st.sampled_from(_SOURCES))
            svals = [draw(st.floats(0.1, 1e3)) for _ in ELEMENT_TYPES[src].params]
            lines.append(f"s{i} ' {src} ({i} 0; {', '.join(repr(v) for v in svals)})")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(chain_netlists())
def test_to_text_round_trip(text: str) -> None:
    nl = parse_netlist(text)
    again = parse_netlist(nl.to_text())
    assert again.elements == tuple(
        type(el)(el.name, el.code, el.nodes, el.params, again.element(el.name).line)
        for el in nl.elements
    )
    assert again.base == nl.base and again.free_nodes == nl.free_nodes

"""The conformance matrix (pipeline/analysis/conformance.py, benchmarks/conformance.py):
its definition covers every triple plan accepts, the committed page covers the matrix, the
CI's pairwise covering subset covers every pair and passes, and each check can fail."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.analysis import conformance as c
from mbstudy.pipeline.analysis.conformance_page import parse_page, render_page
from mbstudy.pipeline.study.spec import StudyError

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "reference" / "conformance.md"


@pytest.fixture(scope="module")
def defined():
    return c.matrix()


def _study(model: str, formulation: str, integrator: str) -> str:
    return f"""
[study]
name = "probe"
model = "{model}"
t_end = 0.1
samples = 11

[[runs]]
name = "probe"
formulation = "{formulation}"
integrator = "{integrator}"
"""


@pytest.mark.parametrize("label", ["fourbar", "top", "studies/mechanisms/slider_crank.toml"])
def test_the_matrix_accepts_exactly_what_the_study_validation_accepts(defined, label):
    """Against the study parser itself (what ``mbstudy plan`` runs), block by block."""
    from mbstudy.pipeline.study.parse import parse_study
    from mbstudy.solvers import registry

    accepted, refused = defined
    mine = {t.key[1:] for t in accepted if t.model.label == label}
    theirs = set()
    model = str(REPO / label) if label.endswith(".toml") else label
    for f in registry.entries("formulation"):
        for i in registry.entries("integrator"):
            try:
                parse_study(_study(model, f, i), base_dir=REPO)
            except StudyError as exc:
                assert "incompatible" in str(exc), str(exc)  # nothing else may be wrong
                continue
            theirs.add((f, i))
    assert mine == theirs
    assert {t.key[1:] for t, _ in refused if t.model.label == label} == {
        (f, i) for f in registry.entries("formulation") for i in registry.entries("integrator")
    } - theirs


def test_the_matrix_spans_every_model_formulation_integrator_and_shipped_file(defined):
    from mbstudy.solvers import registry

    accepted, refused = defined
    assert len({t.key for t in accepted} | {t.key for t, _ in refused}) == len(accepted) + len(
        refused)
    labels = {t.model.label for t in accepted}
    for name, entry in registry.entries("model").items():
        if not hasattr(entry.module, "run_network_case"):
            assert name in labels
    for net in (REPO / "studies" / "networks").glob("*.net"):
        assert f"network:{net.name}" in labels
    for path in (REPO / "studies" / "mechanisms").glob("*.toml"):
        rel = f"studies/mechanisms/{path.name}"
        assert rel in labels or {f"{rel}#constraint", f"{rel}#element"} <= labels, rel
    assert {t.formulation for t in accepted} == set(registry.entries("formulation"))
    assert {t.integrator for t in accepted} == set(registry.entries("integrator"))


def test_the_committed_page_covers_every_accepted_and_refused_triple(defined):
    """A method, model or shipped file added without re-running the matrix fails here."""
    accepted, refused = defined
    on_page, refused_on_page, verdicts = parse_page(PAGE.read_text(encoding="utf-8"))
    missing = sorted({t.key for t in accepted} - on_page)
    assert not missing, f"{len(missing)} accepted triples not on docs/reference/conformance.md, " \
                        f"e.g. {missing[:3]}: re-run python -m benchmarks.conformance"
    assert on_page == {t.key for t in accepted}
    assert refused_on_page == {t.key for t, _ in refused}
    assert set(verdicts.values()) <= {"pass", "FAIL", "not run", "over budget", *(
        f"FAIL (known: {k})" for k in (*c.KNOWN_DEFECTS, *c.FINDINGS))}  # fmt: skip


def test_covering_subset_is_fixed_and_covers_every_pair(defined):
    accepted, _ = defined
    sub = c.covering_subset(accepted)
    assert [t.key for t in sub] == [t.key for t in c.covering_subset(list(accepted))]
    need = set().union(*(c.pairs_of(t) for t in accepted))
    have = set().union(*(c.pairs_of(t) for t in sub))
    assert have == need
    assert len(sub) < len(accepted) / 3
    # the lower bound of any covering array: one triple per (model, integrator) pair
    assert len(sub) >= len({p for p in need if p[0] == "mi"})


def _subset_params():
    """The subset, each triple expected to do what the committed full run recorded: a
    known defect or a finding of the matrix is a strict xfail naming it (it flips to a
    failure, XPASS, once fixed: re-run the matrix after merging the fix); a triple that
    was over the CPU budget there is not run here (no timing in tests)."""
    accepted, _ = c.matrix()
    _, _, words = parse_page(PAGE.read_text(encoding="utf-8"))
    table = {**c.KNOWN_DEFECTS, **c.FINDINGS}
    out = []
    for t in c.covering_subset(accepted):
        word = words.get(t.key, "not run")
        key = c.known_defect(t)
        marks = []
        if key and word.startswith("FAIL"):
            marks = [pytest.mark.xfail(strict=True, reason=f"{key}: {table[key]}")]
        elif word in ("over budget", "not run"):
            marks = [pytest.mark.skip(
                reason=f"docs/reference/conformance.md: {word} in the full run")]
        elif word != "pass":
            marks = [pytest.mark.xfail(strict=True,
                                       reason=f"docs/reference/conformance.md: {word}")]
        out.append(pytest.param(t, id=t.label, marks=marks))
    return out


@pytest.fixture(scope="module")
def subset_verdicts():
    """Every triple of the subset, run once in parallel on the available cores."""
    accepted, _ = c.matrix()
    return {v.triple: v for v in c.run_many(c.covering_subset(accepted), budget=False)}


@pytest.mark.parametrize("triple", _subset_params())
def test_ci_subset_triple_conforms(triple, subset_verdicts):
    v = subset_verdicts[triple.key]
    assert v.passed, [(ch.name, ch.value, ch.expected) for ch in v.checks if not ch.passed]


# --------------------------------------------------------------------------------------
# the checks can fail


@pytest.fixture(scope="module")
def fourbar_run():
    from mbstudy.pipeline.plan.purepy import pure_kernel
    from mbstudy.solvers.runner import run_case

    accepted, _ = c.matrix()
    t = next(x for x in accepted if x.key == ("fourbar", "baumgarte", "rk4"))
    kw = c.setting(t)
    res = run_case("fourbar", "baumgarte", "rk4", kernel=pure_kernel("fourbar", "baumgarte",
                                                                     "rk4"), **kw)  # fmt: skip
    return t, res, kw


def _copy(res):
    import copy

    out = copy.copy(res)
    out.D = res.D.copy()
    out.Y = res.Y.copy()
    return out


def test_an_honest_run_passes_every_check(fourbar_run):
    t, res, kw = fourbar_run
    v = c.check_result(t, res, kw)
    assert v.passed and [ch.name for ch in v.checks] == ["status", "finite", "phi", "dphi",
                                                          "energy", "lam"]  # fmt: skip


@pytest.mark.parametrize(("column", "delta", "fails"), [
    (0, 1e-8, "phi"),  # 1e-8 above round-off (1e-11) of |Phi|
    (1, 1e-8, "dphi"),
    (3, 1e-6, "energy"),  # |E| ~ 1 J: 1e-6 J is 1000x the round-off allowance
    (5, 1e-3, "lam"),  # a reaction force off by 1 mN
])  # fmt: skip
def test_a_wrong_stored_value_fails_its_check(fourbar_run, column, delta, fails):
    t, res, kw = fourbar_run
    bad = _copy(res)
    bad.D[3, column] += delta
    v = c.check_result(t, bad, kw)
    assert v.failed == [fails]


def test_a_silent_nan_fails_finite_and_the_levels(fourbar_run):
    t, res, kw = fourbar_run
    bad = _copy(res)
    bad.D[:, 0] = np.nan
    v = c.check_result(t, bad, kw)
    assert "finite" in v.failed and "phi" in v.failed


def test_the_page_renders_and_parses_back(defined):
    accepted, refused = defined
    few = accepted[:3]
    verdicts = [c.Verdict(t.key, [c.Check("status", True, "ok", "ok")], {"steps": 4.0})
                for t in few]  # fmt: skip
    page = render_page(verdicts, refused[:5], {"seconds": 1.0})
    got, got_refused, words = parse_page(page)
    assert got == {t.key for t in few}
    assert got_refused == {t.key for t, _ in refused[:5]}
    assert set(words.values()) == {"pass"}

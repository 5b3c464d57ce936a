"""A launch resolves the store location once and its model entry once in the launching
process, and passes them on (counted by wrapping the two resolvers wherever a module of
mbstudy holds them, around one real launch of studies/smoke.toml, a built-in model, and of
studies/mech_slider_crank.toml, a mechanism file whose entry is a generated module).
Worker processes resolve their own copy of the entry (a module is not pickled); they are
not counted here."""

from __future__ import annotations

import math
import sys
import tomllib
from collections import Counter

import pytest
from mbstudy.pipeline.store import urls
from mbstudy.solvers import model_entry

import mbstudy
from tests.conftest import STUDIES


def _count_calls(monkeypatch, module, name: str, calls: Counter) -> None:
    """Replace ``module.name`` and every ``from module import name`` copy in the loaded
    modules of mbstudy by a wrapper counting the calls by first argument."""
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls[str(args[0]) if args else ""] += 1
        return original(*args, **kwargs)

    for mod in list(sys.modules.values()):
        if (getattr(mod, "__name__", "") or "").startswith("mbstudy") and (
            getattr(mod, name, None) is original
        ):
            monkeypatch.setattr(mod, name, counted)


@pytest.fixture(scope="module", params=["smoke.toml", "mech_slider_crank.toml"])
def counts(request, tmp_path_factory):
    """The calls of both resolvers during one ``mbstudy launch STUDY`` run through the
    command line in this process (engine python: no compile, same path)."""
    import mbstudy.pipeline.run.launch
    import mbstudy.pipeline.store.zarr_store
    from mbstudy.pipeline.cli.app import app
    from typer.testing import CliRunner

    store = tmp_path_factory.mktemp("resolve") / "s.zarr"
    stores: Counter = Counter()
    models: Counter = Counter()
    with pytest.MonkeyPatch.context() as mp:
        _count_calls(mp, urls, "store_location", stores)
        _count_calls(mp, model_entry, "model", models)
        result = CliRunner().invoke(app, ["launch", str(STUDIES / request.param), "--store",
                                          str(store), "--workers", "1", "--engine", "python"])
    assert result.exit_code == 0, result.output
    study = tomllib.loads((STUDIES / request.param).read_text())
    for run in study["runs"]:  # every case of every block ran: the launch went all the way
        values = [*run.values(), *run.get("model", {}).values()]  # model.k = [...] nests
        n = math.prod(len(v) for v in values if isinstance(v, list))
        assert mbstudy.open_results(store, run["name"])["status"].size == n
    return stores, models, store


def test_a_launch_resolves_its_store_location_once(counts):
    stores, _, _ = counts
    assert sum(stores.values()) == 1, stores


def test_a_launch_resolves_its_model_entry_once(counts):
    _, models, _ = counts
    # one model, one resolution (45 before the entry was passed on, for smoke.toml)
    assert len(models) == 1 and sum(models.values()) == 1, models


def test_plan_and_report_resolve_the_model_once(counts, tmp_path):
    """The other stages that need the model: ``mbstudy plan`` (through the study's entry)
    and ``mbstudy report`` of the store just written (once per store)."""
    from mbstudy.pipeline.cli.app import app
    from typer.testing import CliRunner

    _, _, store = counts
    study = mbstudy.open_results(store).attrs["study_name"]
    for args in (["plan", str(STUDIES / f"{study}.toml")],
                 ["report", str(store), "--out", str(tmp_path / "report")]):  # fmt: skip
        models: Counter = Counter()
        with pytest.MonkeyPatch.context() as mp:
            _count_calls(mp, model_entry, "model", models)
            result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert len(models) == 1 and sum(models.values()) == 1, (args[0], models)

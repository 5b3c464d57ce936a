"""A study of a mechanism file end to end on a real LocalCluster and Zarr store: the store
holds the reactions and the file's text and sha256; after the file is edited a relaunch
on the same store is refused as a different study, and ``overwrite`` recomputes it."""

from __future__ import annotations

import hashlib

import mechanisms_testkit as kit
import numpy as np
import pytest

STUDY = """
[study]
name = "mech_e2e"
model = "fourbar.toml"
t_end = 0.05
samples = 6

[reference]
integrator = "dopri5"
formulation = "projection"
rtol = 1e-10
atol = 1e-12

[[runs]]
name = "b"
formulation = "baumgarte"
integrator = "rk4"
h = 0.0025
omega_n = 5.0
xi = 1.0
model.L3 = [0.40, 0.41]

[output]
store = "out.zarr"
series = ["phi_norm", "lam"]
"""


@pytest.mark.slow
@pytest.mark.cluster
def test_launch_records_the_file_and_refuses_an_edited_one(tmp_path) -> None:
    from mbstudy.pipeline import open_results
    from mbstudy.pipeline.run.launch import launch
    from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError

    text = (kit.MECHANISMS / "fourbar.toml").read_text()
    mech = tmp_path / "fourbar.toml"
    mech.write_text(text)
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    store = tmp_path / "out.zarr"
    launch(study, store=store, workers=1, quiet=True, echo=lambda s: None)
    attrs = ResultStore.open(store).root_attrs()
    assert attrs["model_file_text"] == text
    assert attrs["model_file_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    ds = open_results(store, "b")
    assert int((ds.status == 0).sum()) == 2
    lam = ds.lam.values
    assert lam.shape[-1] == 8 and np.isfinite(lam).all() and np.abs(lam).max() > 1.0

    mech.write_text(text.replace("g = 9.81", "g = 9.80"))
    with pytest.raises(StoreError, match="changed since the store was made"):
        launch(study, store=store, workers=1, quiet=True, echo=lambda s: None)
    launch(study, store=store, workers=1, quiet=True, overwrite=True, echo=lambda s: None)
    new = ResultStore.open(store).root_attrs()
    assert new["model_file_sha256"] != attrs["model_file_sha256"]
    assert "g = 9.80" in new["model_file_text"]

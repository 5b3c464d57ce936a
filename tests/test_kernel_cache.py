"""``mbstudy cache``: what the kernel caches hold and which entries are pruned
(solvers/kernel_cache.py). Built on a real kernel directory: the current kernel is the one
compose writes for today's sources; the others are what earlier sources or an interrupted
write leave behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mbstudy.solvers import compose


def _mbstudy(*args, env):
    return subprocess.run([sys.executable, "-m", "mbstudy.pipeline.cli.app", *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_cache_lists_and_prunes_only_what_no_source_can_use(tmp_path, monkeypatch):
    kdir, ndir = tmp_path / "kernels", tmp_path / "numba"
    monkeypatch.setenv("MBSTUDY_KERNEL_DIR", str(kdir))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(ndir))
    monkeypatch.setattr(compose.load, "_LOADED", {})
    current = compose.kernel_module("pendulum", "baumgarte", "rk4")  # writes today's file
    cur_key = current.__name__.split(".")[-1]
    stale_key = cur_key[:-16] + "0123456789abcdef"  # the same triple, older sources
    (kdir / f"{stale_key}.py").write_text("# older sources\n")
    (kdir / f"{stale_key}.lock").write_text("")
    unknown_key = "mbk_mymech_baumgarte_rk4_0123456789abcdef"  # a model not registered here
    (kdir / f"{unknown_key}.py").write_text("# a mechanism file's kernel\n")
    (kdir / f"{cur_key}abcd.tmp").write_text("torn")
    sub = ndir / "some_dir"
    sub.mkdir(parents=True)
    for key in (cur_key, stale_key, "mbk_gone_x_y_0000000000000000"):
        (sub / f"{key}.common_run-10.py311.nbi").write_bytes(b"x" * 100)
    env = dict(os.environ)
    res = _mbstudy("cache", "--json", env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["kernels"]["current"]["entries"] == 1
    assert out["kernels"]["stale"]["entries"] == 1
    assert out["kernels"]["unknown"]["entries"] == 1
    assert out["kernels"]["orphan"]["entries"] == 2  # the temporary file, the gone module
    assert out["numba"]["files"] == 3
    res = _mbstudy("cache", "--prune", env=env)
    assert res.returncode == 0, res.stderr
    assert "pruned 5 files" in res.stdout
    left = {p.name for p in kdir.iterdir()} | {p.name for p in sub.iterdir()}
    assert left == {f"{cur_key}.py", f"{unknown_key}.py", f"{cur_key}.common_run-10.py311.nbi"}
    text = _mbstudy("cache", env=env).stdout
    assert "current     1 entries" in text and "stale" not in text


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_cache_refuses_a_kernel_directory_of_another_user(tmp_path):
    kdir = tmp_path / "kernels"
    kdir.mkdir()
    (kdir / "mbk_pendulum_baumgarte_rk4_0123456789abcdef.py").write_text("# stale\n")
    os.chown(kdir, 65534, 65534)
    env = dict(os.environ, MBSTUDY_KERNEL_DIR=str(kdir), NUMBA_CACHE_DIR=str(tmp_path / "nb"))
    res = _mbstudy("cache", "--prune", env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "not by this user" in lines[0], res.stderr
    assert len(list(kdir.iterdir())) == 1  # nothing deleted

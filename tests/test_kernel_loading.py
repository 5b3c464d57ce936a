"""Loading a composed kernel under concurrency, from a trusted directory, by content key
(solvers/compose/: no crash in a race while loading kernels; content-addressed
cache keys).

The race: a worker's warm-up plugin and a reference task ask for the same kernel from two
threads; the module used to be put into ``sys.modules`` before it had executed, so the
second thread got a module without ``common_state_size``. Here many threads in each of
several processes ask for the same kernels at the same instant, with empty kernel
directories shared by the processes, and every caller must get the complete module.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mbstudy.solvers import compose, model_entry
from mbstudy.solvers.compose import keys

# generation and execution only (numba compiles on the first call, which is not made)
HAMMER = textwrap.dedent(
    """
    import json, sys, threading
    from mbstudy.solvers import compose

    triples = [tuple(t.split("/")) for t in sys.argv[1].split(",")]
    n_threads = int(sys.argv[2])
    bad, ids = [], {}
    for triple in triples:
        barrier = threading.Barrier(n_threads)
        got = []

        def ask():
            barrier.wait()
            m = compose.kernel_module(*triple)
            ok = all(hasattr(m, a) for a in ("common_state_size", "common_run", "form_rhs"))
            got.append((id(m), ok))

        threads = [threading.Thread(target=ask) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if not all(ok for _, ok in got) or len(got) != n_threads:
            bad.append("/".join(triple))
        ids["/".join(triple)] = len({i for i, _ in got})
    print(json.dumps({"bad": bad, "distinct_modules": ids}))
    """
)

TRIPLES = [
    "fourbar/baumgarte/rk4",
    "fourbar/projection/dopri5",
    "andrews/drcs/dopri5",
    "pendulum/penalty/rk4",
    "nfourbar/qr/rk4",
    "top/auglag/dop853",
]


def _env(tmp_path: Path) -> dict:
    return dict(os.environ, MBSTUDY_KERNEL_DIR=str(tmp_path / "kernels"),
                NUMBA_CACHE_DIR=str(tmp_path / "numba"))  # fmt: skip


def test_many_threads_in_many_processes_all_get_the_complete_module(tmp_path):
    env = _env(tmp_path)
    procs = [
        subprocess.Popen([sys.executable, "-c", HAMMER, ",".join(TRIPLES), "12"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        res = json.loads(out.strip().splitlines()[-1])
        assert res["bad"] == []
        assert set(res["distinct_modules"].values()) == {1}  # one module object per process
    files = sorted(p.name for p in (tmp_path / "kernels").glob("*.py"))
    assert len(files) == len(TRIPLES)  # the processes wrote one file per kernel
    assert not list((tmp_path / "kernels").glob("*.tmp"))  # no temporary left behind


def test_a_planted_kernel_file_is_never_executed(tmp_path, monkeypatch):
    """A file in the kernel directory whose text differs from the generated one (an
    attacker's, or a torn write) is replaced, and the generated text is what runs."""
    monkeypatch.setenv("MBSTUDY_KERNEL_DIR", str(tmp_path / "kernels"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    triple = ("pendulum", "baumgarte", "rk4")
    text = compose.generate_source(*triple)
    key = compose.kernel_key(*triple, text)
    (tmp_path / "kernels").mkdir(mode=0o700)
    marker = tmp_path / "pwned"
    planted = tmp_path / "kernels" / f"{key}.py"
    planted.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.setattr(compose.load, "_LOADED", {})
    module = compose.kernel_module(*triple)
    assert not marker.exists()
    assert hasattr(module, "common_run")
    assert planted.read_text() == text
    assert module.__file__ == str(planted)


def test_cache_directories_are_made_private(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    compose.secure_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) & 0o022 == 0
    fresh = compose.secure_dir(tmp_path / "a" / "kernels")
    assert stat.S_IMODE(fresh.stat().st_mode) & 0o077 == 0


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_cache_directory_of_another_user_is_refused(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    os.chown(other, 65534, 65534)  # nobody
    with pytest.raises(compose.UnsafeCacheDir, match="not by this user"):
        compose.secure_dir(other)
    monkeypatch.setenv("MBSTUDY_KERNEL_DIR", str(other))
    monkeypatch.setattr(compose.load, "_LOADED", {})
    with pytest.raises(compose.UnsafeCacheDir):
        compose.kernel_module("pendulum", "baumgarte", "rk4")


def test_the_key_covers_the_kernel_text_and_its_model_files_only(monkeypatch):
    triple = ("andrews", "baumgarte", "dopri5")
    text = compose.generate_source(*triple)
    key = compose.kernel_key(*triple, text)
    assert key.startswith("mbk_andrews_baumgarte_dopri5_")
    assert compose.kernel_key(*triple, text) == key  # a pure function of the sources
    assert compose.kernel_key(*triple, text + "\n# edited\n") != key
    assert compose.kernel_key(*triple, text, augmented=True) != key
    files = keys._dependency_files(model_entry.model("andrews").module)
    names = {Path(f).name for f in files}
    assert "andrews.py" in names
    # the runner, the registry and the other formulations are not part of the key: an
    # edit there (a docstring in runner.py) keeps every kernel
    assert not names & {"runner.py", "registry.py", "load.py", "metrics.py"}
    model_file = model_entry.model("andrews").module.__file__
    real = keys._file_digest

    def edited(path):
        return "0" * 64 if path == model_file else real(path)

    monkeypatch.setattr(keys, "_file_digest", edited)
    assert compose.kernel_key(*triple, text) != key  # an edit of the model file does count


def test_a_model_generated_in_memory_keys_by_its_declared_hash(monkeypatch):
    """Models made from mechanism files may declare ``KERNEL_SOURCE_HASH`` (the content
    hash of what they were generated from) instead of having a file of their own."""
    mod = model_entry.model("pendulum").module
    text = compose.generate_source("pendulum", "baumgarte", "rk4")
    monkeypatch.setattr(mod, "KERNEL_SOURCE_HASH", "aaaa", raising=False)
    a = compose.kernel_key("pendulum", "baumgarte", "rk4", text)
    monkeypatch.setattr(mod, "KERNEL_SOURCE_HASH", "bbbb", raising=False)
    b = compose.kernel_key("pendulum", "baumgarte", "rk4", text)
    assert a != b


COMPILE = textwrap.dedent(
    """
    import json, sys
    from mbstudy.solvers import runner

    k = runner.load_kernel(*sys.argv[1].split("/"))
    print(json.dumps({"compiled": k.compiled, "compile_s": k.compile_s}))
    """
)


OSC_STUDY = """
[study]
name = "osc-warm"
model = "oscillator"
t_end = 1.0
samples = 11

[reference]
integrator = "rk4"
formulation = "none"
h = 0.001

[[runs]]
name = "rk4"
formulation = "none"
integrator = "rk4"
h = [0.01, 0.005]
"""


def test_a_kernel_compiles_once_for_processes_sharing_the_caches(tmp_path):
    """Workers of one machine and ``mbstudy warm`` start the same kernel at the same moment
    with empty caches: one compiles it, the others wait on the kernel's file lock and load
    numba's cache."""
    env = _env(tmp_path)
    study = tmp_path / "osc.toml"
    study.write_text(OSC_STUDY)
    cmds = [[sys.executable, "-c", COMPILE, "oscillator/none/rk4"]] * 2
    cmds.append([sys.executable, "-m", "mbstudy.pipeline.cli.app", "warm", str(study),
                 "--workers", "1"])
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for cmd in cmds]  # fmt: skip
    compiled = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
        last = out.strip().splitlines()[-1]
        if last.startswith("{"):
            compiled.append(json.loads(last)["compiled"])
        else:  # mbstudy warm: "kernels: compiled 1 in ..." or "kernels: loaded 1 from cache"
            assert last.startswith("kernels: "), last
            compiled.append(last.startswith("kernels: compiled 1 "))
            assert "oscillator/none/rk4" in err
    assert sorted(compiled) == [False, False, True]

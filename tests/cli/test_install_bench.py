"""`make install-bench` without the peers' archives fails, naming what it could not build."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_SH = ROOT / "src" / "tachyflow" / "bench" / "peers" / "build.sh"


def build(sources, folder, tools=None, **variables):
    """build.sh SOURCES FOLDER/build; with ``tools``, a folder of stand-in compilers."""
    environment = dict(os.environ, NPB_KERNELS="cg", NPB_CLASSES="S", **variables)
    if tools is not None:
        environment.update(MPIFC="true", MPICC="true",
                           PATH=f"{tools}{os.pathsep}{environment['PATH']}")
    return subprocess.run(["bash", str(BUILD_SH), str(sources), str(folder / "build")],
                          capture_output=True, text=True, timeout=60, env=environment)


def stand_in_tools(folder):
    """cmake and git that do nothing: no test here reaches a build step."""
    tools = folder / "tools"
    tools.mkdir()
    for name in ("cmake", "git"):
        (tools / name).write_text("#!/bin/sh\nexit 0\n")
        (tools / name).chmod(0o755)
    return tools


def built(folder, *programs):
    """Stand-ins for peers already built in folder/build."""
    for program in programs:
        path = folder / "build" / program
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_install_bench_in_a_clone_without_shared_fails_in_one_line(tmp_path):
    clone = tmp_path / "clone"  # no ../shared beside it
    (clone / BUILD_SH.relative_to(ROOT)).parent.mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", clone)
    shutil.copy(BUILD_SH, clone / BUILD_SH.relative_to(ROOT))
    # The installs before it (virtual environment, packages) are taken as done.
    result = subprocess.run(
        ["make", "-C", str(clone), "-o", ".venv/.installed-bench", "-o",
         ".venv/.installed-peer-tools", "install-bench", f"TACHYFLOW_PEERS_BUILD={tmp_path}/b"],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, MAKEFLAGS=""),
    )
    assert result.returncode != 0
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("peers:")]
    assert "no folder ../shared/peers" in line and "TACHYFLOW_PEER_SOURCES" in line
    assert all(peer in line for peer in ("2DECOMP&FFT", "CaNS", "NPB 3.4"))
    assert not any((tmp_path / "b" / "bin").iterdir())


def test_without_the_archives_folder_only_peers_still_to_build_are_named(tmp_path):
    built(tmp_path, "bin/decomp_poisson", "CaNS/build/cans")
    result = build(tmp_path / "none", tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("peers: no folder") and len(result.stderr.splitlines()) == 1
    assert "NPB 3.4 (kernel.class programs: 1)" in result.stderr
    assert "CaNS" not in result.stderr and "2DECOMP" not in result.stderr
    built(tmp_path, "NPB3.4-MPI/bin/cg.S.x")
    result = build(tmp_path / "none", tmp_path)
    assert result.returncode == 0 and "every peer already built" in result.stdout


def test_each_missing_archive_skips_its_peer_and_the_exit_names_them(tmp_path):
    sources = tmp_path / "sources"
    sources.mkdir()
    result = build(sources, tmp_path, tools=stand_in_tools(tmp_path))
    assert result.returncode == 1
    for peer in ("2DECOMP&FFT", "CaNS", "NPB"):
        assert f"peers: skipping {peer}" in result.stdout
    assert "SU2 not built (optional)" in result.stdout
    assert result.stderr.splitlines()[-1].startswith(
        "peers: not built for want of their archives in"
    )
    assert "2DECOMP&FFT, CaNS, NPB 3.4" in result.stderr
    # With the others built, only the one still missing is named.
    built(tmp_path, "bin/decomp_poisson", "NPB3.4-MPI/bin/cg.S.x")
    result = build(sources, tmp_path, tools=tmp_path / "tools")
    assert result.returncode == 1 and result.stderr.rstrip().endswith(
        "CaNS (their benchmarks will record peers_missing)"
    )
    built(tmp_path, "CaNS/build/cans")  # every peer built: SU2 alone, optional, missing
    assert build(sources, tmp_path, tools=tmp_path / "tools").returncode == 0

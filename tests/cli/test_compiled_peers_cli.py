"""``tachyflow bench poisson`` with 2DECOMP&FFT beside it, when `make install-bench` built it."""

import json

import pytest

from tachyflow.bench.peers import builds as peer_builds
from tachyflow.bench.peers import decomp as decomp_peer
from tests.cli.test_cli import tachyflow


def built_or_skip(peer: str) -> None:
    try:
        peer_builds.find(peer)
    except peer_builds.PeerMissing as missing:
        pytest.skip(f"{peer} {missing}")


@pytest.mark.parametrize("ranks, proc_grid", [(1, "1x1"), (2, "1x2"), (3, "3x1")])
def test_bench_poisson_measures_2decomp_fft_in_the_same_run(tmp_path, ranks, proc_grid):
    built_or_skip("2decomp-fft")
    result = tachyflow(
        "bench", "poisson", "-n", str(ranks), "--grid", "16", "12", "8", "--proc-grid",
        proc_grid, "--repeats", "2", "--warmup", "1", "-o", str(tmp_path), timeout=300,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    document = json.loads((tmp_path / f"poisson_16x12x8_{proc_grid}.json").read_text())
    solve, roundtrip = document["peers"][:2]
    assert (solve["name"], roundtrip["name"]) == (
        decomp_peer.SOLVE_NAME,
        decomp_peer.ROUNDTRIP_NAME,
    )
    for peer in (solve, roundtrip):
        assert peer["verified"] and peer["max_error"] < 1e-10
        assert "x".join(map(str, peer["proc_grid"])) == proc_grid
        assert len(peer["samples"]) == 2 and peer["median"] > 0
    ours = document["results"][0]  # then its overlapped variants, and on 3x1 its z-slabs off
    slabs = proc_grid == "3x1"
    assert [entry["name"] for entry in document["results"]] == [
        "tachyflow-poisson",
        "tachyflow-poisson-overlapped",
        "tachyflow-poisson-overlapped-progress-calls",
        *(["tachyflow-poisson-pencil-transposes"] if slabs else []),
    ]
    assert ("slabs" in document) is slabs
    assert ours["speedup_vs_peer"] == solve["median"] / ours["median"]
    assert "2DECOMP&FFT" not in document.get("peers_missing", {})

"""``tachyflow bench hpl`` end to end: ours and the peer (or the reason it is missing) in
one results file."""

import json

from tests.cli.test_cli import tachyflow


def test_bench_hpl_writes_ours_and_the_peer(tmp_path):
    result = tachyflow(
        "bench", "hpl", "-n", "2", "--size", "300", "--block", "32", "--repeats", "1",
        "-o", str(tmp_path), timeout=120,
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    document = json.loads((tmp_path / "hpl_1x2_2ranks.json").read_text())
    assert (tmp_path / "hpl_1x2_2ranks.png").is_file()
    assert document["benchmark"] == "hpl" and document["mpi"]["ranks"] == 2
    (ours,) = document["results"]
    assert ours["n"] == 300 and ours["proc_grid"] == [1, 2] and ours["broadcast"] == "ring"
    assert ours["residual_passed"] is True and ours["residual"] < 16 and ours["gflops"] > 0
    assert "PASSED" in result.stdout
    if document["peers"]:  # hpcc installed (make install-bench)
        (peer,) = document["peers"]
        assert peer["n"] == 300 and peer["gflops"] > 0 and peer["residual_passed"] is True
        assert ours["speedup_vs_peer"] == ours["gflops"] / peer["gflops"]
    else:
        assert "hpcc HPL" in document["peers_missing"]


def test_bench_hpl_refuses_a_grid_that_is_not_the_rank_count():
    result = tachyflow("bench", "hpl", "-n", "2", "--grid", "2x2", "--size", "50", "--no-peer")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "a 2x2 process grid needs 4 ranks, got 2" in result.stderr
    block = tachyflow("bench", "hpl", "--block", "0")
    assert block.returncode == 2 and "expected a positive integer" in block.stderr

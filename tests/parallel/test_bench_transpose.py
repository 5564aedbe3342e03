import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.bench.report import write_report
from tachyflow.bench.transpose import peer_available, run_transpose_benchmark
from tachyflow.commands import results_modules, save_results


@pytest.mark.parallel([1, 3])
def test_benchmark_verifies_and_records_every_candidate(tmp_path_factory):
    comm = MPI.COMM_WORLD
    document = run_transpose_benchmark(
        (12, 10, 9), None, "complex128", repeats=3, warmup=1, comm=comm
    )
    names = [entry["name"] for entry in document["results"]]
    ok = (
        names == ["tachyflow-alltoallv", "tachyflow-alltoallw"]
        and all(e["verified"] and len(e["samples"]) == 3 for e in document["results"])
        and document["mpi"]["ranks"] == comm.size
        and document["params"]["bytes_per_round_trip"] == 4 * 12 * 10 * 9 * 16
    )
    if peer_available():
        ok = (
            ok
            and document["peers"][0]["verified"]
            and all(e["speedup_vs_peer"] > 0 for e in document["results"])
        )
    else:
        ok = ok and "mpi4py-fft" in document["peers_missing"]
    parallel_assert(ok, f"unexpected document: {document['results']}")
    if comm.rank == 0:
        folder = tmp_path_factory.mktemp("results")
        json_path, png_path = save_results(document, folder)
        report = write_report(folder, None, results_modules())
        assert png_path.stat().st_size > 1000
        assert "tachyflow-alltoallv" in report.read_text()
        assert json_path.name == "transpose_12x10x9_3x1_complex128.json" or comm.size == 1

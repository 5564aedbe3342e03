import json
from pathlib import Path

import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.bench.noise_exchange import variants
from tachyflow.bench.report import write_report
from tachyflow.cli import main
from tachyflow.commands import results_modules
from tachyflow.parallel.noise_exchange import PHASES


@pytest.mark.parallel(nprocs=2)
def test_command_records_every_variant_with_breakdown_traffic_and_plot(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = comm.bcast(str(tmp_path_factory.mktemp("noise")) if comm.rank == 0 else None)
    arguments = ["bench", "noise-exchange", "-n", "2", "--points", "300", "--grid", "12", "12",
                 "12", "--repeats", "2", "--warmup", "1", "-o", folder]
    code = main(arguments)
    parallel_assert(code == 0, f"exit code {code}")
    if comm.rank != 0:
        return
    path = Path(folder) / "noise-exchange_294points_2ranks.json"
    document = json.loads(path.read_text())
    assert document["benchmark"] == "noise-exchange"
    assert document["params"]["points"] == 6 * 7**2 and document["mpi"]["ranks"] == 2
    assert {"load_avg", "processor"} <= document["machine"].keys()
    assert "MPICH" in document["mpi"]["library"] or "Open MPI" in document["mpi"]["library"]
    entries = {entry["name"]: entry for entry in document["results"]}
    assert list(entries) == [name for name, _, _ in variants()]
    for entry in entries.values():
        assert entry["verified"] and len(entry["samples"]) == 2
        assert set(entry["breakdown"]) == set(PHASES)
        assert all(value >= 0 for value in entry["breakdown"].values())
        assert len(entry["statistics_per_rank"]) == 2
        assert entry["speedup_vs_two_sided"] > 0
    assert entries["two-sided"]["speedup_vs_two_sided"] == 1.0

    def traffic(name, key):
        return sum(rank[key] for rank in entries[name]["statistics_per_rank"])

    # Type A sends one message per point and owner, Type B one per target, Type C the same
    # but 4 values per point instead of up to 32.
    assert traffic("put/lock", "messages_sent") == traffic("two-sided", "messages_sent")
    assert traffic("put/lock", "messages_sent") > traffic("aggregated-put/fence", "messages_sent")
    assert traffic("aggregated-put/pscw", "messages_sent") <= 2
    assert 0 < traffic("source-put/lock", "bytes_sent") < traffic("put/lock", "bytes_sent") / 4
    ratios = document["summary"]["ratios"]
    assert set(ratios) == {"lock", "fence", "pscw"}
    assert all(r["B_over_A"] > 0 and r["C_over_B"] > 0 for r in ratios.values())
    assert document["summary"]["fastest"] in entries
    assert path.with_suffix(".png").stat().st_size > 10_000
    report = write_report(folder, None, results_modules())
    assert "noise-exchange" in report.read_text()

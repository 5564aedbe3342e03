"""The emulated cluster: two network namespaces on a bridge, a shaped link, MPI over TCP
between them. Skipped where namespaces cannot be made (not root, no iproute2)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.cli.test_cli import tachyflow

PINGPONG = """
import sys, numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
size = int(sys.argv[1])
buffer = np.zeros(size, dtype=np.uint8)
for label, repeats in (("warm", 1), ("timed", 4)):
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(repeats):
        if comm.rank == 0:
            comm.Send(buffer, 1); comm.Recv(buffer, 1)
        else:
            comm.Recv(buffer, 0); comm.Send(buffer, 0)
    seconds = (MPI.Wtime() - start) / (2 * repeats)
if comm.rank == 0:
    print(size / seconds)
"""


def namespaces_possible() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "iproute2 (ip, tc) is not installed"
    probe = subprocess.run(["ip", "netns", "add", "tachyflow-probe"], capture_output=True)
    if probe.returncode:
        return f"cannot make network namespaces: {probe.stderr.decode().strip()}"
    subprocess.run(["ip", "netns", "del", "tachyflow-probe"], capture_output=True)
    return None


@pytest.fixture
def cluster_state(tmp_path, monkeypatch):
    reason = namespaces_possible()
    if reason:
        pytest.skip(reason)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    if "tachyflow-node" in listed:
        pytest.skip("an emulated cluster is up: not touching it")
    monkeypatch.setenv("TACHYFLOW_CLUSTER_STATE", str(tmp_path / "state"))
    yield tmp_path / "state"
    tachyflow("cluster", "down")


def test_two_shaped_nodes_come_up_carry_mpi_over_tcp_and_go_down(cluster_state, tmp_path):
    up = tachyflow("cluster", "up", "--nodes", "2", "--bandwidth", "100Mbit")
    assert up.returncode == 0, up.stderr
    again = tachyflow("cluster", "up", "--nodes", "2", "--bandwidth", "100Mbit")
    assert again.returncode == 0 and "already up" in again.stdout
    status = json.loads(tachyflow("cluster", "status").stdout)
    assert status["up"] and status["addresses"] == ["10.231.0.1", "10.231.0.2"]
    # A 4 MiB ping-pong between the nodes: TCP through the shaped link, 12.5 MB/s.
    script = tmp_path / "pingpong.py"
    script.write_text(PINGPONG)
    from tachyflow import runtime

    launcher = runtime.launcher(2, 2)
    result = subprocess.run(
        [*launcher, sys.executable, str(script), str(4 * 2**20)],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("PMI_")},
    )
    assert result.returncode == 0, result.stderr
    bandwidth = float(result.stdout.split()[-1])
    assert abs(bandwidth / 12.5e6 - 1) < 0.15, bandwidth
    # Our own commands spread over the nodes record it.
    info = tachyflow("info", "-n", "2", "--nodes", "2", "--json")
    assert info.returncode == 0, info.stderr
    details = json.loads(info.stdout)
    assert details["nodes"] == 2 and details["ranks_per_node"] == 1
    assert details["network"] == "100Mbit" and details["placement"] == "block"
    down = tachyflow("cluster", "down")
    assert down.returncode == 0 and "tachyflow-node0" in down.stdout
    listed = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert "tfveth" not in listed and "tfbr0" not in listed
    assert (
        "tachyflow-node"
        not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    )


def test_latency_is_emulated_with_netem_or_refused_without_leaving_anything(cluster_state):
    up = tachyflow("cluster", "up", "--nodes", "2", "--bandwidth", "1Gbit", "--latency", "1ms")
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    if up.returncode:  # this kernel has no netem: said in one line, nothing made
        assert up.returncode == 2 and "cannot delay packets" in up.stderr, up.stderr
        assert "tachyflow-node" not in listed
        status = json.loads(tachyflow("cluster", "status").stdout)
        assert not status["up"] and "not emulated" in status["latency"]
    else:
        status = json.loads(tachyflow("cluster", "status").stdout)
        assert status["up"] and status["latency"] == "1ms"
    bad = tachyflow("cluster", "up", "--nodes", "2", "--latency", "slow")
    assert bad.returncode == 2 and "expected a positive time such as 50us" in bad.stderr


def test_cluster_input_is_checked(cluster_state):
    bad = tachyflow("cluster", "up", "--nodes", "2", "--bandwidth", "fast")
    assert bad.returncode == 2 and "expected a rate such as 100Mbit" in bad.stderr
    missing = tachyflow("info", "-n", "2", "--nodes", "2")
    assert missing.returncode == 2 and "no emulated cluster is up" in missing.stderr
    no_ranks = tachyflow("info", "--nodes", "2")
    assert no_ranks.returncode == 2 and "--nodes needs -n" in no_ranks.stderr


def _networks(networks: str, stages: str, out) -> dict:
    """``bench networks --stages STAGES --quick`` on ``networks``; its document."""
    result = tachyflow(
        "bench", "networks", "--networks", networks, "--stages", stages, "--quick",
        "-o", str(out), timeout=600, env={"MPIEXEC_TIMEOUT": "300"},
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    document = json.loads((out / "networks_2ranks_2nodes.json").read_text())
    assert (out / "networks_2ranks_2nodes.png").stat().st_size > 0
    assert (out / "report.html").is_file()
    assert set(document["paper_profiles"]) == {
        "fast-ethernet", "gigabit-ethernet", "myrinet-2000"
    }
    # The cluster the benchmark brought up is gone.
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "tachyflow-node" not in listed
    return document


@pytest.mark.slow  # make test keeps the nodes' own test
@pytest.mark.timeout(300)
def test_bench_networks_puts_tcp_between_nodes_beside_shared_memory(cluster_state, tmp_path):
    # MPINS2D's stage is the quickest (20 DP-SGS iterations): the orchestration, the
    # cluster brought up and down, the merge, plot and report are what is checked here.
    document = _networks("shared-memory,unshaped", "mpins2d", tmp_path / "networks")
    by_network = {summary["network"]: summary for summary in document["networks"]}
    assert set(by_network) == {"shared-memory", "unshaped"}
    assert by_network["unshaped"]["mpi"]["nodes"] == 2
    assert by_network["shared-memory"]["mpi"]["nodes"] == 1
    tcp = [e for e in document["results"] if e["network"] == "unshaped"]
    assert [e["measurement"] for e in tcp] == ["MPINS2D iteration"]
    assert tcp[0]["slowdown_vs_shared_memory"] > 0


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_bench_networks_measures_the_shaped_bandwidth(cluster_state, tmp_path):
    document = _networks("shared-memory,100Mbit", "pingpong", tmp_path / "networks")
    by_network = {summary["network"]: summary for summary in document["networks"]}
    # The fitted bandwidth is about the shaped link's (fitted to messages of 64 KiB at most,
    # which HTB's burst lets through a little faster); shared memory is far faster.
    fitted = by_network["100Mbit"]["fit"]["bandwidth"]
    assert 0.5 < fitted / 12.5e6 < 2.0, fitted
    assert by_network["shared-memory"]["fit"]["bandwidth"] > 5 * fitted
    slow = [e for e in document["results"] if e["network"] == "100Mbit"]
    assert slow and all(e["slowdown_vs_shared_memory"] > 1 for e in slow)


def test_bench_networks_input_is_checked():
    bad = tachyflow("bench", "networks", "--networks", "shared-memory,fast")
    assert bad.returncode == 2 and "expected a rate such as 100Mbit" in bad.stderr
    stages = tachyflow("bench", "networks", "--stages", "pingpong,hpl-ish")
    assert stages.returncode == 2 and "expected some of" in stages.stderr
    nodes = tachyflow("bench", "networks", "--nodes", "3", "-n", "2")
    assert nodes.returncode == 2 and "at least one rank per node" in nodes.stderr


OPEN_MPI = {
    "TACHYFLOW_MPIEXEC": "/usr/bin/mpiexec.openmpi",
    "MPI4PY_LIBMPI": "/usr/lib/x86_64-linux-gnu/libmpi.so.40",
}


def test_open_mpi_runs_across_the_nodes_over_tcp(cluster_state, tmp_path, monkeypatch):
    missing = [path for path in OPEN_MPI.values() if not os.path.exists(path)]
    if missing:
        pytest.skip(f"Open MPI is not installed here ({', '.join(missing)})")
    up = tachyflow("cluster", "up", "--nodes", "2", "--bandwidth", "100Mbit")
    assert up.returncode == 0, up.stderr
    for name, value in OPEN_MPI.items():
        monkeypatch.setenv(name, value)
    script = tmp_path / "pingpong.py"
    script.write_text(PINGPONG)
    from tachyflow import runtime

    launcher = runtime.launcher(2, 2)
    assert "--mca" in launcher  # Open MPI's mpirun, not Hydra
    result = subprocess.run(
        [*launcher, sys.executable, str(script), str(4 * 2**20)],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_"))},
    )
    assert result.returncode == 0, result.stderr
    bandwidth = float(result.stdout.split()[-1])
    assert abs(bandwidth / 12.5e6 - 1) < 0.15, bandwidth  # TCP through the shaped link
    info = tachyflow("info", "-n", "2", "--nodes", "2", "--json", env=OPEN_MPI)
    assert info.returncode == 0, info.stderr
    details = json.loads(info.stdout)
    assert details["mpi_library"].startswith("Open MPI") and "\0" not in details["mpi_library"]
    assert details["nodes"] == 2 and details["network"] == "100Mbit"

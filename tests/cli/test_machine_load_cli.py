"""A benchmark's results record the CPU other processes took while it ran (machine_load)."""

import json
import subprocess
import sys

from tests.processes import command_environment


def test_an_mpi_benchmark_records_the_load_measured_by_rank_0_for_its_whole_job(tmp_path):
    arguments = ["bench", "transpose", "-n", "2", "--grid", "8", "8", "8", "--repeats", "2",
                 "--method", "alltoallw", "-o", str(tmp_path)]
    with subprocess.Popen([sys.executable, "-m", "tachyflow", *arguments], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=command_environment()) as launcher:
        stdout, stderr = launcher.communicate(timeout=300)
    assert launcher.returncode == 0, stdout[-2000:] + stderr[-2000:]
    (path,) = tmp_path.glob("transpose*.json")
    record = json.loads(path.read_text())["machine_load"]
    # Rank 0 climbed past mpiexec and its proxy to this test's child: the job's root.
    assert record["job_root"] == launcher.pid
    assert record["window"] > 0 and record["other_cpu"] >= 0
    assert record["threshold"] == 0.05
    assert record["quiet"] is (record["other_cpu"] <= record["threshold"])
    assert ("loaded machine" in stderr) is not record["quiet"]

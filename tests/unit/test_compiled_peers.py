"""The compiled peers (2DECOMP&FFT, CaNS, NPB) without building them: discovery in the peers
build folder, the reasons recorded when they are missing, the driver's pipe protocol, the
CaNS input and the parsing of the peers' outputs."""

import os
import stat
import threading

import pytest
from mpi4py import MPI

from tachyflow.bench.harness import Candidate, measure, time_interleaved
from tachyflow.bench.peers import builds as peer_builds
from tachyflow.bench.peers import cans as cans_peer
from tachyflow.bench.peers import decomp as decomp_peer
from tachyflow.bench.peers import npb
from tachyflow.bench.results import new_results


@pytest.fixture
def build(tmp_path, monkeypatch):
    """An empty peers build folder named by $TACHYFLOW_PEERS_BUILD."""
    monkeypatch.setenv(peer_builds.BUILD_VARIABLE, str(tmp_path))
    return tmp_path


def make_program(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_build_folder_defaults_to_the_users_cache(monkeypatch):
    monkeypatch.delenv(peer_builds.BUILD_VARIABLE, raising=False)
    assert peer_builds.build_folder() == (
        peer_builds.Path.home() / ".cache" / "tachyflow" / "peers"
    )


def test_a_built_peer_is_found(build):
    program = make_program(build / "bin" / "decomp_poisson")
    cans = make_program(build / "CaNS" / "build" / "cans")
    (build / "NPB3.4-MPI" / "bin").mkdir(parents=True)
    assert peer_builds.find("2decomp-fft") == program
    assert peer_builds.find("cans") == cans
    assert peer_builds.find("npb") == build / "NPB3.4-MPI" / "bin"


def test_a_missing_peer_says_how_to_build_it(build):
    with pytest.raises(peer_builds.PeerMissing) as missing:
        peer_builds.find("cans")
    message = str(missing.value)
    assert str(build / "CaNS" / "build" / "cans") in message
    assert "make install-bench" in message and peer_builds.SOURCES_VARIABLE in message
    assert "make install-bench" in decomp_peer.missing_reason()


def test_a_failed_build_points_at_its_log(build):
    (build / "logs").mkdir()
    (build / "logs" / "2decomp-fft.log").write_text("cmake: error\n")
    with pytest.raises(peer_builds.PeerMissing, match=r"2decomp-fft\.log"):
        peer_builds.find("2decomp-fft")


def test_a_program_that_cannot_run_is_missing(build):
    (build / "bin").mkdir()
    (build / "bin" / "decomp_poisson").write_text("not executable")
    with pytest.raises(peer_builds.PeerMissing):
        peer_builds.find("2decomp-fft")


def test_an_unknown_peer_is_refused():
    with pytest.raises(ValueError, match="unknown peer 'fftx'"):
        peer_builds.find("fftx")


def test_the_peers_launcher_can_be_named(monkeypatch):
    monkeypatch.setenv(peer_builds.LAUNCHER_VARIABLE, "/opt/mpich/bin/mpiexec")
    assert peer_builds.launcher(3) == ["/opt/mpich/bin/mpiexec", "-n", "3"]


def test_the_drivers_answers_are_parsed():
    ready = decomp_peer.parse_ready("ready   4.4409E-16  8.8818E-16 2 1\n")
    assert ready == {"roundtrip_error": 4.4409e-16, "poisson_error": 8.8818e-16,
                     "proc_grid": [2, 1]}
    assert decomp_peer.parse_seconds(" 1.234500000000000E-02\n") == 0.012345
    for wrong in ("", "ready 1e-16", "error 1 2 3 4"):
        with pytest.raises(RuntimeError, match="expected 'ready"):
            decomp_peer.parse_ready(wrong)
    for wrong in ("", "nan?", "-1.0", "0"):
        with pytest.raises(RuntimeError, match="seconds"):
            decomp_peer.parse_seconds(wrong)


def test_a_driver_that_never_starts_times_out(tmp_path):
    os.mkfifo(tmp_path / "command.0")
    os.mkfifo(tmp_path / "reply.0")
    with pytest.raises(TimeoutError, match="did not open"):
        decomp_peer.DriverConnection(tmp_path, 0, timeout=0.2)


def fake_driver(folder, errors=(1e-16, 2e-15), seconds="2.5E-02"):
    """A thread answering like decomp_poisson on rank 0: the commands it received."""
    received = []

    def serve():
        with open(folder / "command.0") as commands, open(folder / "reply.0", "w") as replies:
            for line in commands:
                received.append(line.strip())
                if line.startswith("setup"):
                    grid = line.split()[4:6]
                    replies.write(f"ready {errors[0]} {errors[1]} {' '.join(grid)}\n")
                elif line.startswith(("poisson", "roundtrip")):
                    replies.write(seconds + "\n")
                else:
                    break
                replies.flush()

    os.mkfifo(folder / "command.0")
    os.mkfifo(folder / "reply.0")
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, received


def test_the_driver_is_timed_by_itself_and_interleaved(tmp_path):
    thread, received = fake_driver(tmp_path)
    found, close, why_not = decomp_peer.candidates(
        tmp_path, (16, 8, 4), (1, 1), (6.0, 2.0, 3.0), MPI.COMM_SELF
    )
    assert why_not is None
    assert [c.name for c in found] == [decomp_peer.SOLVE_NAME, decomp_peer.ROUNDTRIP_NAME]
    assert all(c.verified and c.peer and c.self_timed for c in found)
    document = new_results("poisson", {}, MPI.COMM_SELF)
    ours = Candidate("ours", lambda: None, True)
    measure(document, [ours, *found], MPI.COMM_SELF, repeats=2, warmup=0, description="t")
    close()
    thread.join(5)
    assert received[0] == "setup 16 8 4 1 1 6.0 2.0 3.0"
    assert received[1:] == ["poisson 1", "roundtrip 1"] * 2 + ["quit"]
    solve, roundtrip = document["peers"]
    assert solve["samples"] == [0.025, 0.025] and solve["version"] == "2.1.0"
    (result,) = document["results"]
    assert result["speedup_vs_peer"] == 0.025 / result["median"]
    assert set(result["speedup_vs_peers"]) == {solve["name"], roundtrip["name"]}


def test_a_driver_with_a_wrong_answer_is_not_verified(tmp_path):
    thread, _ = fake_driver(tmp_path, errors=(1e-16, 3e-4))
    found, close, _ = decomp_peer.candidates(
        tmp_path, (8, 8, 8), (1, 1), (1.0, 1.0, 1.0), MPI.COMM_SELF
    )
    close()
    thread.join(5)
    assert [c.verified for c in found] == [False, True]


def test_self_timed_candidates_report_their_own_seconds():
    samples = time_interleaved(
        {"peer": lambda: 0.5}, MPI.COMM_SELF, repeats=3, warmup=1, iterations=2,
        self_timed={"peer"},
    )
    assert samples == {"peer": [0.5, 0.5, 0.5]}


def test_the_cans_input_is_our_channel_with_walls_in_its_z():
    text = cans_peer.input_namelist(
        (64, 48, 32), (12.5, 2.0, 4.2), 1.6, 1 / 2800, 1.0, 2e-3, 9, (2, 1)
    )
    assert "ng(1:3) = 64, 32, 48" in text and "l(1:3) = 12.5, 4.2, 2.0" in text
    assert "gtype = 1, gr = 3.2" in text and "dt_f = 0.002" in text
    assert "visci = 2800.0" in text and "nstep = 9" in text and "icheck = 9" in text
    assert "dims(1:2) = 2, 1, ipencil_axis = 3" in text and "velf(1:3) = 1.0" in text
    assert "iout3d = 0" in text and "isave = 0" in text and "is_impdiff_1d = T" in text
    with pytest.raises(ValueError, match="at least 2 steps"):
        cans_peer.input_namelist((8, 8, 8), (1, 1, 1), 0, 1e-3, 1, 1e-3, 1, (1, 1))
    with pytest.raises(ValueError, match="positive"):
        cans_peer.input_namelist((8, 8, 8), (1, 1, 1), 0, 1e-3, 1, 0.0, 5, (1, 1))


CANS_OUTPUT = """ *** Calculation loop starts now ***
 Time step #           1 Time =    1.0000000000000000E-003
 Average, minimum & maximum elapsed time:
  0.9   0.8   1.0
 Time step #           2 Time =    2.0000000000000000E-003
 Average, minimum & maximum elapsed time:
   6.0E-002   5.5E-002   6.5E-002
 Time step #           3 Time =    3.0000000000000000E-003
 Average, minimum & maximum elapsed time:
   6.0E-002   5.9E-002   6.1E-002
 Time step #           4 Time =    4.0000000000000000E-003
 Checking stability and divergence...
 Velocity divergence norms: Mean =    2.2E-016 | Maximum =    1.1E-015
 Average, minimum & maximum elapsed time:
  0.2   0.2   0.2
 *** Fim ***
"""


def test_cans_step_times_are_the_slowest_ranks_after_the_warmup():
    log = cans_peer.parse_log(CANS_OUTPUT)
    assert log == {"step_times": [1.0, 0.065, 0.061, 0.2], "max_divergence": 1.1e-15,
                   "finished": True}
    entry = cans_peer.peer_entry(log, warmup=1)
    assert entry["samples"] == [0.065, 0.061] and entry["verified"]
    assert entry["median"] == pytest.approx(0.063)
    with pytest.raises(RuntimeError, match="fewer than"):
        cans_peer.peer_entry(log, warmup=3)


def test_a_cans_run_without_its_divergence_check_is_not_verified():
    unchecked = cans_peer.parse_log(CANS_OUTPUT.replace("Velocity divergence", "Velocity"))
    assert not cans_peer.peer_entry(unchecked, warmup=1)["verified"]
    diverged = cans_peer.parse_log(CANS_OUTPUT.replace("1.1E-015", "3.0E-002"))
    assert not cans_peer.peer_entry(diverged, warmup=1)["verified"]


def test_cans_missing_is_recorded_with_the_reason(build):
    document = {"params": {"global_shape": [16, 16, 16], "proc_grid": [1, 1], "dt": 1e-3,
                           "warmup": 1, "repeats": 2}, "results": [], "peers": []}
    cans_peer.measure_beside(document, 1)
    assert "make install-bench" in document["peers_missing"]["CaNS"]
    assert document["peers"] == []


def test_npb_programs_are_found_by_either_naming(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"cg\.A\.x or cg\.A\.2"):
        npb.npb_program(tmp_path, "cg", "A", 2)
    (tmp_path / "cg.A.2").write_text("")
    assert npb.npb_program(tmp_path, "cg", "A", 2) == tmp_path / "cg.A.2"
    (tmp_path / "cg.A.x").write_text("")
    assert npb.npb_program(tmp_path, "cg", "A", 2) == tmp_path / "cg.A.x"


NPB_OUTPUT = """ NAS Parallel Benchmarks 3.4 -- CG Benchmark
 CG Benchmark Completed.
 Class           =                        A
 Time in seconds =                     1.25
 Mop/s total     =                  1197.23
 Verification    =               SUCCESSFUL
"""


def test_npbs_summary_is_parsed():
    assert npb.parse_npb_output(NPB_OUTPUT) == {
        "verified": True, "median": 1.25, "mops_total": 1197.23, "version": "3.4",
    }
    failed = npb.parse_npb_output(NPB_OUTPUT.replace("SUCCESSFUL", "UNSUCCESSFUL"))
    assert failed["verified"] is False
    with pytest.raises(ValueError, match="Mop/s total"):
        npb.parse_npb_output(NPB_OUTPUT.replace("Mop/s total", "Mops"))


def test_npbs_program_runs_without_checkpoints_in_a_scratch_folder(tmp_path, monkeypatch):
    # This NPB release checkpoints into its working folder unless told not to: the peer
    # must be timed without those writes and leave the caller's folder as it was.
    binaries = tmp_path / "bin"
    record = tmp_path / "record"
    program = make_program(binaries / "cg.S.x")
    program.write_text(
        f'#!/bin/sh\necho "$PWD $MPI_NO_CHECKPOINT" > {record}\ntouch litter\n'
        f"cat <<'END'\n{NPB_OUTPUT}END\n"
    )
    launch = make_program(tmp_path / "launch")  # stands for `mpiexec -n 1 PROGRAM`
    launch.write_text('#!/bin/sh\nshift 2\nexec "$@"\n')
    monkeypatch.chdir(tmp_path)
    peer = npb.run_npb_peer(binaries, "cg", "S", 1, mpiexec=str(launch))
    assert peer["verified"] and peer["mops_total"] == 1197.23
    folder, flag = record.read_text().split()
    assert flag == "1" and folder != str(tmp_path)
    assert not (tmp_path / "litter").exists() and not os.path.exists(folder)


def test_a_driver_that_fails_its_setup_is_recorded_not_timed(tmp_path):
    os.mkfifo(tmp_path / "command.0")
    os.mkfifo(tmp_path / "reply.0")

    def fail():  # opens its pipes, reads the setup and leaves, as after an MPI_Abort
        with open(tmp_path / "command.0") as commands, open(tmp_path / "reply.0", "w"):
            commands.readline()

    thread = threading.Thread(target=fail, daemon=True)
    thread.start()
    found, close, why_not = decomp_peer.candidates(
        tmp_path, (8, 8, 8), (1, 1), (1.0, 1.0, 1.0), MPI.COMM_SELF
    )
    close()
    thread.join(5)
    assert found == [] and "expected 'ready" in why_not


def test_the_peers_are_bound_to_cores_by_their_own_launcher(monkeypatch):
    monkeypatch.delenv(peer_builds.LAUNCHER_VARIABLE, raising=False)
    monkeypatch.setattr(peer_builds.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert peer_builds.launcher(2) == [
        "/usr/bin/mpiexec.mpich", "-bind-to", "core", "-n", "2",
    ]

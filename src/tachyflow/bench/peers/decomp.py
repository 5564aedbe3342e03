"""2DECOMP&FFT beside ``tachyflow bench poisson``: its driver served as an MPI job of its own.

The driver (``decomp_poisson.f90`` beside this module, built against 2DECOMP&FFT v2.1.0
by ``make install-bench``) runs on as many ranks as ours. Rank ``r`` of each job talks to rank
``r`` of the other through two named pipes, ``command.r`` and ``reply.r``: tachyflow's rank
asks for a sample (``poisson 1``), the driver times it inside its own job (barrier, calls,
slowest rank) and answers with the seconds. So its samples interleave with ours one by one,
as the harness interleaves in-process peers, while the job not being timed sleeps in a
blocking read rather than spinning in an MPI wait that would take a core from the other.

:func:`start` and :func:`stop` run outside MPI (the command's ``orchestrate``), which
passes the pipes' folder to the ranks in ``$TACHYFLOW_DECOMP_PEER``; :func:`candidates`
runs on the ranks.
"""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

from mpi4py import MPI

from tachyflow import runtime
from tachyflow.bench.harness import Candidate
from tachyflow.bench.peers import builds

FOLDER_VARIABLE = "TACHYFLOW_DECOMP_PEER"
VERSION = "2.1.0"
SOLVE_NAME = "2decomp-fft-poisson"
ROUNDTRIP_NAME = "2decomp-fft-roundtrip"
CONNECT_TIMEOUT = 120.0  # seconds for the driver's job to start and open its pipes
TOLERANCE = 1e-10


def start(ranks: int, folder, program: Path | None = None) -> subprocess.Popen:
    """Create the pipes in ``folder`` and start the driver on ``ranks`` ranks (not MPI).

    Raises :class:`~tachyflow.bench.peers.builds.PeerMissing` when the driver is not built.
    Its output goes to ``folder/driver.log``.
    """
    program = builds.find("2decomp-fft") if program is None else Path(program)
    folder = Path(folder)
    for rank in range(ranks):
        os.mkfifo(folder / f"command.{rank}")
        os.mkfifo(folder / f"reply.{rank}")
    with open(folder / "driver.log", "w") as log:
        return subprocess.Popen(
            [*builds.launcher(ranks), str(program), str(folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**runtime.ONE_THREAD_PER_RANK, **os.environ},
        )


def stop(job: subprocess.Popen, timeout: float = 30.0) -> None:
    """Wait for the driver to leave (ours sent ``quit``); terminate it if it does not."""
    try:
        job.wait(timeout)
    except subprocess.TimeoutExpired:
        job.terminate()
        try:
            job.wait(10)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait()


def parse_ready(line: str) -> dict:
    """The driver's answer to ``setup``: ``ready ROUNDTRIP_ERROR POISSON_ERROR P_ROW P_COL``.

    Raises
    ------
    RuntimeError
        ``line`` is not such an answer (e.g. empty: the driver's job ended).
    """
    words = line.split()
    if len(words) != 5 or words[0] != "ready":
        raise RuntimeError(f"2DECOMP&FFT driver: expected 'ready ...', got {line!r}")
    return {
        "roundtrip_error": float(words[1]),
        "poisson_error": float(words[2]),
        "proc_grid": [int(words[3]), int(words[4])],
    }


def parse_seconds(line: str) -> float:
    """The driver's answer to a timing command: seconds per call (a positive number)."""
    try:
        seconds = float(line)
    except ValueError:
        raise RuntimeError(f"2DECOMP&FFT driver: expected seconds, got {line!r}") from None
    if not seconds > 0:
        raise RuntimeError(f"2DECOMP&FFT driver: expected positive seconds, got {line!r}")
    return seconds


class DriverConnection:
    """This rank's two pipes to the same rank of the driver's job (not collective).

    Raises
    ------
    TimeoutError
        The driver did not open its end within ``timeout`` seconds.
    """

    def __init__(self, folder, rank: int, timeout: float = CONNECT_TIMEOUT):
        folder = Path(folder)
        deadline = time.monotonic() + timeout
        # Opening a pipe for writing without blocking fails (ENXIO) until the reader has
        # it open: retry, so that a driver that never starts cannot hang this rank.
        while True:
            try:
                descriptor = os.open(folder / f"command.{rank}", os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as error:
                if error.errno != errno.ENXIO or time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the 2DECOMP&FFT driver did not open {folder}/command.{rank} within "
                        f"{timeout:.0f} s (its output: {folder}/driver.log)"
                    ) from error
                time.sleep(0.05)
        os.set_blocking(descriptor, True)
        self._commands = os.fdopen(descriptor, "w", buffering=1)
        # The driver opens its reply end right after its command end.
        self._replies = open(folder / f"reply.{rank}")

    def ask(self, command: str) -> str:
        """Send one command line and return the reply line."""
        self._commands.write(command + "\n")
        return self._replies.readline()

    def close(self) -> None:
        """Tell the driver to finish, and close the pipes."""
        try:
            self._commands.write("quit\n")
            self._commands.close()
        except BrokenPipeError:  # the driver is gone already
            pass
        self._replies.close()


def missing_reason() -> str:
    """Why the driver is not beside this run (no ``$TACHYFLOW_DECOMP_PEER``)."""
    try:
        builds.find("2decomp-fft")
    except builds.PeerMissing as missing:
        return str(missing)
    return (
        "not started: it runs as an MPI job of its own that `tachyflow bench poisson -n N` "
        "starts (not under an outer mpiexec, nor with --nodes)"
    )


def candidates(folder, shape, proc_grid, lengths, comm):
    """The driver's Poisson solve and round trip as self-timed candidates (collective).

    Returns ``(candidates, close, why_not)``: ``close`` ends the driver's job;
    ``why_not`` is None, or why the driver could not be reached (then no candidates).
    """
    connection = ready = error = None
    try:
        connection = DriverConnection(folder, comm.Get_rank())
        numbers = [*shape, *proc_grid, *(repr(float(length)) for length in lengths)]
        ready = parse_ready(connection.ask("setup " + " ".join(map(str, numbers))))
    except (OSError, TimeoutError, RuntimeError) as problem:
        error = str(problem)
    # Every rank's driver must be set up, or none is timed (the samples are collective).
    if not comm.allreduce(ready is not None, op=MPI.LAND):
        if connection is not None:
            connection.close()
        errors = [e for e in comm.allgather(error) if e]
        return [], lambda: None, errors[0] if errors else "unreachable"
    details = {"version": VERSION, "proc_grid": ready["proc_grid"], "program": "decomp_poisson"}
    agreed = ready["proc_grid"] == list(proc_grid)

    def candidate(name: str, command: str, error: str, operation: str) -> Candidate:
        return Candidate(
            name,
            lambda: parse_seconds(connection.ask(f"{command} 1")),
            ready[error] < TOLERANCE and agreed,
            peer=True,
            details={**details, "max_error": ready[error], "operation": operation},
            self_timed=True,
        )

    return [
        candidate(SOLVE_NAME, "poisson", "poisson_error",
                  "r2c FFT, divide by the periodic FD eigenvalues, c2r"),
        candidate(ROUNDTRIP_NAME, "roundtrip", "roundtrip_error", "r2c FFT, 1/N, c2r"),
    ], connection.close, None

"""A transit reader or a serial transit writer in a process of its own, for the tests.

    python tests/transit_peer.py read RUN_DIR --log FILE [--out NPZ] [--hold S]
                                               [--max-steps N] [--timeout S] [--limit S]
    python tests/transit_peer.py write RUN_DIR --log FILE [--steps N] [--interval S]
                                                [--limit S]

Progress goes to the log file, one line per event, flushed at once, so that a test can
follow it: ``attached``, ``step <step> <time>``, ``dying <time.time()>``, ``end <status>
skipped <n>``, ``closed`` (reader); ``opened``, ``wrote <step> <seconds>``, ``refused
<message>`` (writer). ``--limit`` arms SIGALRM, whose default action ends the process: a
peer never outlives a test, even when stuck in a call that does not return to Python.

The writer's fields are :func:`expected_field` of the step, so a reader's result can be
checked exactly. Tests start peers with :func:`peer_process`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

WRITER_SHAPE = (5, 4, 3)
WRITER_FIELDS = ("u", "p")


def expected_field(shape, name: str, step: int, fields=WRITER_FIELDS) -> np.ndarray:
    """The global field ``name`` at ``step``: every value distinct across fields and steps."""
    cells = int(np.prod(shape))
    index = np.arange(cells, dtype=np.float64).reshape(shape)
    return index + cells * (fields.index(name) + len(fields) * step)


# Variables that would make a peer started by an MPI rank think it is a rank of that job.
LAUNCHER_VARIABLES = ("PMI_", "PMIX_", "HYDRA_", "MPIR_", "MPIEXEC_", "OMPI_")


@contextlib.contextmanager
def peer_process(role: str, run_dir, log: Path, **options):
    """A peer started for a test, killed on the way out if it has not ended by then.

    Keyword options become command-line options (``hold=0.1`` gives ``--hold 0.1``).
    """
    environment = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARIABLES)}
    command = [sys.executable, __file__, role, str(run_dir), "--log", str(log)]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    with open(log.with_suffix(".out"), "w") as output:
        process = subprocess.Popen(command, env=environment, stdout=output, stderr=output)
    try:
        yield process
    finally:
        # A reader killed while it attaches takes its writer down (SST keeps the
        # registering reader's connection without a reference): let it end on its own.
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def log_lines(log: Path) -> list[str]:
    """The lines a peer has logged so far."""
    return log.read_text().splitlines() if log.exists() else []


def wait_until(condition, timeout: float) -> bool:
    """Poll ``condition()`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _log(path: Path, line: str) -> None:
    with open(path, "a") as log:
        log.write(line + "\n")


def read(arguments) -> int:
    from tachyflow.insitu.transit import TransitReader

    received, steps = {}, 0
    with TransitReader(arguments.run_dir, timeout=arguments.timeout) as reader:
        _log(arguments.log, "attached")
        for step, time_value, fields in reader:
            _log(arguments.log, f"step {step} {time_value!r}")
            if arguments.out is not None:
                received.update({f"{step}:{name}": values for name, values in fields.items()})
                # Where each array lies in the grid: the box the writer sent.
                received.update(
                    {f"{step}:{name}:box": np.array([*box.start, *box.shape])
                     for name, box in reader.boxes.items()}
                )
            steps += 1
            if arguments.max_steps and steps >= arguments.max_steps:
                break
            time.sleep(arguments.hold)
            # After the hold, not at once: a writer released by this step's release is
            # then blocked again (its queue full) when the reader dies.
            if arguments.die_after and steps >= arguments.die_after:
                _log(arguments.log, f"dying {time.time()!r}")
                os.kill(os.getpid(), signal.SIGKILL)
        _log(arguments.log, f"end {reader.end_status} skipped {reader.skipped}")
    if arguments.out is not None:
        np.savez(arguments.out, **received)
    _log(arguments.log, "closed")
    return 0


def write(arguments) -> int:
    from mpi4py import MPI

    from tachyflow.insitu.transit import StreamInUseError, TransitWriter
    from tachyflow.parallel import PencilDecomposition

    with PencilDecomposition(WRITER_SHAPE, comm=MPI.COMM_SELF) as decomposition:
        try:
            writer = TransitWriter(decomposition, arguments.run_dir, WRITER_FIELDS)
        except StreamInUseError as error:
            _log(arguments.log, f"refused {error}")
            return 3
        _log(arguments.log, "opened")
        with writer:
            for step in range(arguments.steps):
                fields = {name: expected_field(WRITER_SHAPE, name, step) for name in WRITER_FIELDS}
                writer.write(step, 0.1 * step, fields)
                _log(arguments.log, f"wrote {step} {writer.timings[-1].total!r}")
                time.sleep(arguments.interval)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("read", "write"))
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--hold", type=float, default=0.0, help="seconds between reads")
    parser.add_argument("--max-steps", type=int, default=0, help="then detach")
    parser.add_argument(
        "--die-after", type=int, default=0, help="steps and a hold, then SIGKILL itself"
    )
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--limit", type=int, default=60, help="hard limit, seconds")
    arguments = parser.parse_args(argv)
    signal.alarm(arguments.limit)
    return read(arguments) if arguments.role == "read" else write(arguments)


if __name__ == "__main__":
    sys.exit(main())

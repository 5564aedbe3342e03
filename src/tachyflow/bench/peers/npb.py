"""The peer of ``tachyflow bench npb``: NPB 3.4's own MPI programs, run with the same kernel,
class and rank count as ours, and the summary they print read.

:func:`npb_program` finds a program in the folder ``make install-bench`` built (or another);
:func:`run_npb_peer` runs it in a scratch folder with the peers' launcher and returns the
peers entry, from :func:`parse_npb_output`.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from tachyflow.bench.peers import builds


def npb_program(binaries, kernel: str, problem_class: str, ranks: int) -> Path:
    """NPB's program for ``kernel`` at ``problem_class`` in the folder ``binaries``.

    NPB 3.4 builds one program per kernel and class, ``<kernel>.<class>.x``, that takes the
    rank count at run time; NPB 3.3 and older built one per rank count too,
    ``<kernel>.<class>.<ranks>``. The first found of these is returned.

    Raises
    ------
    FileNotFoundError
        Neither exists; the message says how to build it.
    """
    names = (f"{kernel}.{problem_class}.x", f"{kernel}.{problem_class}.{ranks}")
    for name in names:
        if (Path(binaries) / name).is_file():
            return Path(binaries) / name
    raise FileNotFoundError(
        f"no NPB program {' or '.join(names)} in {binaries}: `make install-bench` builds NPB "
        f"3.4 (NPB_CLASSES, NPB_KERNELS choose which), or in NPB's MPI folder "
        f"`make {kernel} CLASS={problem_class}` (docs/benchmarks.md)"
    )


def parse_npb_output(text: str) -> dict:
    """Mop/s, seconds, verification and version from the summary an NPB program prints.

    Raises
    ------
    ValueError
        A field is missing (the program failed before its summary).
    """
    fields = {}
    for key, label in (
        ("mops_total", "Mop/s total"),
        ("seconds", "Time in seconds"),
        ("verification", "Verification"),
    ):
        found = re.search(rf"{label}\s*=\s*(\S+)", text)
        if found is None:
            raise ValueError(f"no '{label} =' in NPB's output")
        fields[key] = found.group(1)
    version = re.search(r"NAS Parallel Benchmarks ([\d.]+)", text)
    return {
        "verified": fields["verification"] == "SUCCESSFUL",
        "median": float(fields["seconds"]),
        "mops_total": float(fields["mops_total"]),
        "version": version.group(1) if version else "unknown",
    }


def run_npb_peer(
    binaries, kernel: str, problem_class: str, ranks: int, mpiexec: str | None = None
) -> dict:
    """Run NPB's own program for the same kernel, class and rank count (built outside the
    repository, see :func:`npb_program`) and read its summary: the peers entry. ``mpiexec``
    starts it; by default the peers' launcher (:func:`tachyflow.bench.peers.builds.launcher`).
    """
    program = npb_program(binaries, kernel, problem_class, ranks)
    launch = [mpiexec, "-n", str(ranks)] if mpiexec else builds.launcher(ranks)
    # This NPB 3.4 release checkpoints its iterations (compressed copies of the solution in
    # PROGRAM.TIME.checkpoint/ of the working folder) unless MPI_NO_CHECKPOINT is set: that
    # would time file writes our kernels never make, and litter the caller's folder.
    with tempfile.TemporaryDirectory(prefix="tachyflow-npb-") as scratch:
        completed = subprocess.run(
            [*launch, str(program)],
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=scratch,
            env={**os.environ, "MPI_NO_CHECKPOINT": "1"},
        )
    try:
        if completed.returncode:
            raise ValueError(f"exit {completed.returncode}")
        summary = parse_npb_output(completed.stdout)
    except ValueError as error:
        output = completed.stdout + completed.stderr
        raise RuntimeError(f"{program} failed ({error}): {output[-500:]}") from None
    return {
        "name": f"NPB-{kernel.upper()}.{problem_class}",
        **summary,
        "ranks": ranks,
        "program": str(program),
    }

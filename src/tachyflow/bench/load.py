"""The CPU time other processes took while a benchmark ran (``machine_load`` of its results).

A ratio to a peer means little when something else shares the cores: lock-step peers lose
more to contention than tachyflow does, and a loaded ``bench hpl`` once printed a 9.88x win
against an hpcc starved of its time slices. Neither the load average nor nice values say
how much CPU the others actually took, so the results record it: two snapshots of
``/proc`` (at :func:`tachyflow.bench.results.new_results` and when the results file is
first written), on the process that writes the file (rank 0 under MPI). A launcher that
reads its ranks' results back and runs the peer after them (``bench hpl``, ``bench npb``,
``bench unstructured`` with ``-n``) closes the window again when it writes the document, so
that the peer's run is inside it (:func:`closing`).

Other processes' CPU is the busy time of the job's CPUs (``user + nice + system`` of their
lines in ``/proc/stat``; interrupts and steal excluded, steal recorded on its own) minus the
time of the job's own processes: ``utime + stime + cutime + cstime`` of each, so that a
child that ended during the window (a peer's run) still counts, through its parent, to the
job. The system-wide count also sees what per-process sums miss: kernel threads, processes
of other containers on the same virtual machine, short-lived processes whose parent is gone.

The job's processes are the tree under its root, found from the writing process upwards:
while the parent is a tachyflow process (its command line runs ``tachyflow``, or
``python -m tachyflow``) or an MPI launcher or proxy (``mpiexec``, ``hydra_pmi_proxy``,
``mpirun``, Open MPI's daemons), the root moves up to it (the processes passed on the way
are the record's ``chain``). So under ``tachyflow ... -n 2``
the root is the launching ``tachyflow`` and the job is it, ``mpiexec``, its proxy, the
ranks and every peer they start; a shell or test runner above is not part of the job. The
job's CPUs are the root's affinity (a rank pinned to one core still competes on the
others' cores through its peers).

The snapshot counts in clock ticks (``SC_CLK_TCK``, usually 100 per second) per process, so
a window of a second or two resolves other processes' load only to a few hundredths of a
CPU; the benchmarks that compare with a peer run for longer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

# Above this many CPUs' worth of other processes, on average, a comparison is "loaded".
THRESHOLD = 0.05

# Programs that launch or host the ranks of an MPI job (MPICH's Hydra, Open MPI / PRRTE).
LAUNCHERS = frozenset(
    {"mpiexec", "mpiexec.hydra", "mpirun", "hydra_pmi_proxy", "orterun", "orted", "prterun",
     "prted"}
)

PROC = Path("/proc")


def parse_process_stat(text: str) -> tuple[int, int]:
    """The parent and the CPU ticks of one ``/proc/PID/stat`` line.

    Parameters
    ----------
    text : str
        The file's line: ``pid (comm) state ppid ... utime stime cutime cstime ...``; the
        command name may itself hold spaces and parentheses.

    Returns
    -------
    tuple of int
        The parent's pid and ``utime + stime + cutime + cstime`` in clock ticks.
    """
    # The fields after the command name, which ends at the line's last ')'.
    fields = text[text.rindex(")") + 2:].split()
    parent = int(fields[1])
    ticks = sum(int(value) for value in fields[11:15])
    return parent, ticks


def parse_cpu_times(text: str, cpus: Iterable[int] | None = None) -> tuple[int, int]:
    """Busy and stolen ticks of the given CPUs from ``/proc/stat``.

    Parameters
    ----------
    text : str
        The contents of ``/proc/stat``.
    cpus : iterable of int, optional
        The CPUs to count (their ``cpuN`` lines); all of them when ``None``.

    Returns
    -------
    tuple of int
        ``user + nice + system`` and ``steal`` summed over those CPUs, in clock ticks.
    """
    wanted = None if cpus is None else {f"cpu{cpu}" for cpu in cpus}
    busy = steal = 0
    for line in text.splitlines():
        name, _, values = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        if wanted is not None and name not in wanted:
            continue
        ticks = [int(value) for value in values.split()]
        busy += ticks[0] + ticks[1] + ticks[2]
        steal += ticks[7] if len(ticks) > 7 else 0
    return busy, steal


def is_job_process(argv: list[str]) -> bool:
    """Whether a process with command line ``argv`` belongs to a tachyflow job's tree: a
    ``tachyflow`` program (or ``python -m tachyflow``) or an MPI launcher or proxy."""
    if not argv:
        return False
    if os.path.basename(argv[0]) in LAUNCHERS | {"tachyflow"}:
        return True
    # An interpreter: its own options (-u, -O ...) come before the program or module it
    # runs; an option taking a separate value (-X importtime) is not followed.
    for index, word in enumerate(argv[1:], start=1):
        if word == "-m":
            return argv[index + 1:index + 2] == ["tachyflow"]
        if not word.startswith("-"):
            return os.path.basename(word) == "tachyflow"
    return False


def job_chain(
    pid: int, parents: Mapping[int, int], argvs: Mapping[int, list[str]]
) -> list[int]:
    """``pid`` and its ancestors up to its job's root, reached through job processes.

    Parameters
    ----------
    pid : int
        The measuring process (rank 0, or a launcher-only process).
    parents : mapping of int to int
        Each process's parent.
    argvs : mapping of int to list of str
        Each process's command line (missing: not a job process).

    Returns
    -------
    list of int
        From ``pid`` upwards; the last is the root.
    """
    chain = [pid]
    while (parent := parents.get(chain[-1], 0)) > 1 and parent not in chain:
        if not is_job_process(argvs.get(parent, [])):
            break
        chain.append(parent)
    return chain


def descendants(root: int, parents: Mapping[int, int]) -> set[int]:
    """``root`` and every process below it in the ``parents`` tree."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, waiting = set(), [root]
    while waiting:
        pid = waiting.pop()
        if pid not in found:
            found.add(pid)
            waiting.extend(children.get(pid, ()))
    return found


def _processes(proc: Path) -> dict[int, tuple[int, int]]:
    """``pid -> (parent, ticks)`` of every process readable under ``proc``."""
    found = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:  # a process may end between listing and reading
                found[int(entry.name)] = parse_process_stat((entry / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue
    return found


def _argv(proc: Path, pid: int) -> list[str]:
    try:
        return (proc / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def snapshot(since: Mapping | None = None, proc: Path = PROC, pid: int | None = None) -> dict:
    """Ticks of the job's CPUs and of the job's processes now (JSON-ready).

    Parameters
    ----------
    since : mapping, optional
        An earlier snapshot: its job root and CPUs are kept, so that both ends count the
        same tree on the same CPUs.
    proc : pathlib.Path
        Where ``/proc`` is.
    pid : int, optional
        The measuring process (default this one).

    Returns
    -------
    dict
        ``time`` (monotonic seconds), ``busy`` and ``steal`` (ticks of ``cpus``), ``job``
        (ticks of the job's processes), ``root`` (the job's root), ``chain`` (the measuring
        process and its ancestors up to the root) and ``cpus``.
    """
    processes = _processes(proc)
    parents = {child: parent for child, (parent, _) in processes.items()}
    if since is None:
        pid = os.getpid() if pid is None else pid
        ancestors, walker = {}, pid
        while (parent := parents.get(walker, 0)) > 1 and parent not in ancestors:
            ancestors[parent] = _argv(proc, parent)
            walker = parent
        chain = job_chain(pid, parents, ancestors)
        root = chain[-1]
        try:
            cpus = sorted(os.sched_getaffinity(root))
        except OSError:  # the root ended already: every CPU
            cpus = None
    else:
        chain, root, cpus = since["chain"], since["root"], since["cpus"]
    busy, steal = parse_cpu_times((proc / "stat").read_text(), cpus)
    job = sum(processes[p][1] for p in descendants(root, parents) if p in processes)
    return {"time": time.monotonic(), "busy": busy, "steal": steal, "job": job, "root": root,
            "chain": chain, "cpus": cpus}


def summary(since: Mapping, now: Mapping, ticks_per_second: float,
            threshold: float = THRESHOLD) -> dict:
    """The ``machine_load`` record of the window between two snapshots.

    Returns
    -------
    dict
        ``other_cpu``: CPUs' worth of other processes' time on average (busy minus the
        job's, never below 0); ``steal`` and ``all_cpu`` likewise (all_cpu: every busy
        tick, the job's included); ``window`` in seconds; ``quiet``: ``other_cpu`` at or
        under ``threshold``; ``threshold``; ``job_root``; ``cpus``; and ``since``, the
        first snapshot.
    """
    window = now["time"] - since["time"]
    scale = 1.0 / (ticks_per_second * window) if window > 0 else 0.0
    busy = now["busy"] - since["busy"]
    other = max(0, busy - (now["job"] - since["job"])) * scale
    return {
        "other_cpu": other,
        "steal": (now["steal"] - since["steal"]) * scale,
        "all_cpu": busy * scale,
        "window": window,
        "quiet": other <= threshold,
        "threshold": threshold,
        "job_root": since["root"],
        "cpus": since["cpus"],
        "since": dict(since),
    }


def start(proc: Path = PROC) -> dict | None:
    """The opening snapshot of a benchmark's window, ``None`` where there is no ``/proc``."""
    if not (proc / "stat").is_file():
        return None
    return snapshot(proc=proc)


def closing(record: Mapping | None, pid: int | None = None) -> bool:
    """Whether writing a document with this ``machine_load`` now (re)closes its window.

    An open record (``{"since": snapshot}``) is closed at its first writing. A closed one
    is closed again, from the same start, when the writer is on the chain from the
    measuring process to the job's root: the launcher of ``-n N`` reads its ranks' results
    back and runs the peer (hpcc, NPB, PETSc) after them, so its window must reach the
    peer's run. Anyone else (a report, another command merging documents of other jobs)
    keeps the load of the run that measured it.
    """
    if record is None:
        return False
    pid = os.getpid() if pid is None else pid
    return "other_cpu" not in record or pid in record["since"]["chain"]


def finish(since: Mapping, proc: Path = PROC) -> dict:
    """The ``machine_load`` record of the window from the snapshot ``since`` to now."""
    return summary(since, snapshot(since, proc), os.sysconf("SC_CLK_TCK"))


def warning(record: Mapping | None) -> str | None:
    """One line when other processes took more than the threshold, else ``None``."""
    if record is None or record.get("quiet", True):
        return None
    return (
        f"warning: loaded machine: other processes used {record['other_cpu']:.2f} CPU on "
        f"average over the {record['window']:.1f} s of this benchmark (over "
        f"{record['threshold']}): its timings and its ratios to peers are not a fair "
        "comparison (machine_load in the results)"
    )

"""``tachyflow run``: a case from its configuration to its output folder.

The time loop alternates ``solver.step(dt)`` (any registered solver, through the
:class:`~tachyflow.solvers.base.Solver` interface) with a divergence check and the case's
observers (:mod:`tachyflow.observers`: statistics, checkpoints, images, fields,
visualisation, acoustics, and plug-ins'). Output folder, by what writes it::

    config.toml     the resolved configuration (the run)
    log.txt         what rank 0 printed, with times (statistics)
    stats.csv       the solver's statistics: step, time, dt, CFL, ... (statistics)
    timings.json    wall time per phase, the layout, each observer's summary (the run)
    checkpoints/    step_XXXXXXXX.ckpt, the newest [output] checkpoints_kept (checkpoints)
    images/         slices and the statistics history (images); forces.png (bodies),
                    fan.png (fan), profiles.png (turbulence), Mach and pressure pictures
                    of a block grid (block-images), the pictures and probe records of
                    [[insitu.pipeline]] (visualisation)
    fields.bp/      ADIOS2 BP5 series of the cell fields (Fides + VTX attributes), and
    fields.pvd      the same steps as VTK XML files in fields_vtk/ (fields); on a block
                    grid, .vts pieces per rank and .pvts per step (block-fields)
    forces.csv      each immersed body's force and moment (bodies; fan: with thrust,
                    torque, power, pressure rise and coefficients), fan.json (fan)
    surface-loads.csv  a body's loads from its surface's traction (surface-loads)
    wake-coefficients.csv, wake.json  an immersed cylinder's drag, lift, Strouhal
                    number and recirculation length (cylinder-wake)
    profiles.csv, statistics.json  turbulence statistics ([statistics]: turbulence)
    acoustics/      FW-H signals, spectra and directivity at the observers (acoustics)
    convergence.csv, summary.json, surface.csv  residuals and force coefficients of
                    walls (aerodynamics)
    solution.pvtu   an unstructured solver's solution (mesh-solution)
"""

from __future__ import annotations

import collections
import json
import math
import time
from pathlib import Path

import numpy as np

from tachyflow import observers, runtime
from tachyflow.config import Config
from tachyflow.errors import ConfigError, RunInterrupted, SimulationDiverged
from tachyflow.io.checkpoint import checkpoint_candidates, read_checkpoint
from tachyflow.io.files import naming, replacing
from tachyflow.io.locks import RunFolderLock
from tachyflow.parallel import agreement
from tachyflow.parallel.pieces import gather_small
from tachyflow.solvers.base import restartable, solver_class

#: The fraction of its largest value at which an adaptive time step has collapsed.
COLLAPSED = 1e-6


class RunHistory:
    """The statistics records a run holds in memory (``stats.csv`` has every one): the
    last ``recent`` in full, for what reads the latest records (a settling test, the
    monitor), and at most ``kept`` spread evenly over the whole run for the plots (each
    time the spread outgrows ``kept``, every other record goes and the stride doubles).
    A million-step run recording every step holds a few thousand records, not a million
    (0.6 kB each, issue 45).

    ``append`` adds a record; ``len`` counts every record appended; an index or a slice
    with negative ends reads the recent ones (``history[-1]``, ``history[-20:]``);
    iterating gives the plotted spread, the latest record last."""

    def __init__(self, recent: int = 1000, kept: int = 2000):
        if recent < 1 or kept < 2:
            raise ValueError(f"recent must be >= 1 and kept >= 2, got {recent}, {kept}")
        self._recent: collections.deque = collections.deque(maxlen=recent)
        self._spread: list[dict] = []
        self._kept, self._stride, self._count = kept, 1, 0

    def append(self, record: dict) -> None:
        self._recent.append(record)
        if self._count % self._stride == 0:
            self._spread.append(record)
            if len(self._spread) > self._kept:
                self._spread, self._stride = self._spread[::2], 2 * self._stride
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        recent = len(self._recent)
        if isinstance(index, slice):
            ends = [end for end in (index.start, index.stop) if end is not None]
            if any(end >= 0 or end < -recent for end in ends) and self._count > recent:
                raise IndexError(f"only the last {recent} records are held (slice {index})")
            return list(self._recent)[index]
        if self._count > recent and not -recent <= index < 0:
            raise IndexError(f"only the last {recent} records are held (index {index})")
        return self._recent[index]

    def __iter__(self):
        yield from self._spread
        if self._recent and (not self._spread or self._spread[-1] is not self._recent[-1]):
            yield self._recent[-1]


class Simulation:
    """Runs one case into an output folder.

    Parameters
    ----------
    config : Config
        The case; ``[case] solver`` names the solver.
    output : path
        Output folder (created).
    comm : mpi4py.MPI.Intracomm
        Ranks to run on.
    restart : path or "latest", optional
        Checkpoint to continue from; ``"latest"``: the newest one in the output folder
        that reads whole (newer, unreadable ones are skipped with a warning).
    interpolate : bool
        The checkpoint is of another grid of the case (other cells): its fields are
        interpolated onto the case's grid (:meth:`Solver.restore_interpolated`) and the
        observers start afresh (their states belong to the old grid).

    Attributes
    ----------
    solver : Solver
        The case's solver.
    history : RunHistory
        The statistics recorded so far in this process (the recent ones in full, a spread
        of all for the plots).
    observers : list of Observer
        The case's observers (built by :meth:`run`).
    monitored : dict of str to float
        The latest values observers want on the monitor line beside the solver's (a fan's
        pressure rise, torque and power), by name; equal on every rank.
    restored_from : Path or None
        The checkpoint the run continued from.
    dt, cfl, step_seconds : float
        Time step, CFL number and wall time of the last step (what observers read).

    Notes
    -----
    Construction and :meth:`run` are collective; only rank 0 writes files and prints.
    """

    def __init__(self, config: Config, output, comm=None, restart=None, planning: str = "measure",
                 interpolate: bool = False):
        self.config = config
        self.interpolate = bool(interpolate)
        if self.interpolate and restart is None:
            raise ConfigError("--interpolate needs --restart: the checkpoint to interpolate")
        self.comm = runtime.world() if comm is None else comm
        self.output = Path(output)
        self.root = self.comm.Get_rank() == 0
        # One live run per folder: locked before anything in it is touched.
        self._lock = agreement.on_root(self.comm, lambda: RunFolderLock(self.output))
        started = time.perf_counter()
        try:
            self._set_up(config, restart, planning)
        except BaseException:
            if self._lock is not None:  # a failed set-up leaves the folder free
                self._lock.release()
            raise
        # Building the solver, planning its transforms, restoring a checkpoint.
        self.set_up_seconds = time.perf_counter() - started

    def _set_up(self, config: Config, restart, planning: str) -> None:
        solver = solver_class(config.case.solver)
        agreement.on_root(self.comm, lambda: _check_memory(solver, config, self.comm.Get_size()))
        self.solver = solver.from_case(config, self.comm, planning)
        self.decomposition = self.solver.decomposition
        # The settling test reads its window of the latest records.
        self.history = RunHistory(recent=max(1000, config.time.stop_window))
        self.observers: list[observers.Observer] = []
        self.monitored: dict[str, float] = {}
        self.restarted = restart is not None
        self._restored_states: dict[str, observers.ObserverState] = {}
        self.restored_from: Path | None = None
        if self.restarted:
            self._restore(restart)
        self.first_step = self.solver.steps
        self.dt = self.cfl = self.step_seconds = 0.0
        self._largest_dt = 0.0
        self.steps_to_run = 0
        self._log = None
        self._log_problem: OSError | None = None  # a line rank 0 could not write

        def prepare() -> None:
            self.output.mkdir(parents=True, exist_ok=True)
            with replacing(self.output / "config.toml") as temporary:
                temporary.write_text(config.to_toml())
            self._log = (self.output / "log.txt").open("a" if self.restarted else "w")

        agreement.on_root(self.comm, prepare)  # a failure ends every rank, together

    # -- output ----------------------------------------------------------------------------

    def log(self, message: str) -> None:
        """Append a line to ``log.txt`` (rank 0)."""
        if self._log is not None:
            try:
                with naming(self.output / "log.txt"):
                    self._log.write(f"{time.strftime('%H:%M:%S')} {message}\n")
                    self._log.flush()
            except OSError as error:  # raised on every rank at the next check of the run
                self._log_problem = self._log_problem or error

    def _restore(self, restart) -> None:
        """Continue from the checkpoint ``restart`` or, for ``"latest"``, the newest one in
        the output folder that reads whole (collective)."""
        if not restartable(type(self.solver)):
            raise ConfigError(
                f"--restart: solver {self.config.case.solver!r} writes no checkpoints"
            )
        if restart == "latest":
            candidates = agreement.on_root(
                self.comm,
                lambda: checkpoint_candidates(self.output / "checkpoints"),
                share=True,
            )
        else:
            candidates = [Path(restart)]
        if self.interpolate:  # the newest: another grid's checkpoint is read as it is
            if not candidates:
                raise ConfigError(
                    f"--restart latest: no checkpoint in {self.output / 'checkpoints'}")
            checkpoint = self.solver.restore_interpolated(candidates[0])
            self.restored_from = checkpoint.path
            return
        console = runtime.make_console(stderr=True) if self.root else None
        for path in candidates:
            try:
                checkpoint, pieces = read_checkpoint(self.comm, path, self.solver.piece_layout())
            except ConfigError as error:
                if restart != "latest":
                    raise
                if console is not None:
                    console.print(f"skipping checkpoint {path.name}: {error}")
                continue
            break
        else:
            raise ConfigError(
                f"--restart latest: no usable checkpoint in {self.output / 'checkpoints'} "
                f"({len(candidates)} found, none reads whole)"
            )
        if console is not None and path != candidates[0]:
            console.print(f"restarting from {path.name}, the newest checkpoint that reads whole")
        scalars = {"step": checkpoint.step, "time": checkpoint.time, **checkpoint.scalars}
        own = {name: piece for name, piece in pieces.items() if not name.startswith("observer/")}
        self.solver.restore_state(own, scalars)
        for key, value in [*pieces.items(), *checkpoint.replicated.items()]:
            if key.startswith("observer/"):
                _, name, item = key.split("/", 2)
                state = self._restored_states.setdefault(name, observers.ObserverState())
                target = state.pieces if key in pieces else state.replicated
                target[item] = value
        self.restored_from = checkpoint.path

    # -- the loop --------------------------------------------------------------------------

    def _time_step(self) -> float:
        if self.config.time.dt > 0:
            return self.config.time.dt
        return self.solver.stable_time_step(self.config.time.cfl)

    def _check_finite(self) -> None:
        """Stop with SimulationDiverged, on every rank, if a field holds NaN or infinity."""
        solver = self.solver
        name = solver.nonfinite_field()
        problem = None
        if name is not None:
            problem = SimulationDiverged(
                f"{name} is not finite", step=solver.steps, time=solver.time, field=name
            )
        agreement.agree(self.comm, problem or self._log_problem)

    def _check(self, dt: float) -> float:
        """Stop with SimulationDiverged on non-finite values, a CFL beyond the limit, or an
        adaptive time step collapsed to :data:`COLLAPSED` of its largest in this run (a
        velocity growing without bound keeps the CFL number at its target by shrinking
        the step, and would never reach infinity)."""
        self._check_finite()
        if self.config.time.dt == 0:
            self._largest_dt = max(self._largest_dt, dt)
            if dt < COLLAPSED * self._largest_dt:
                raise SimulationDiverged(
                    f"the time step collapsed to {dt:.3g}, {dt / self._largest_dt:.1e} of its "
                    f"largest in this run ({self._largest_dt:.3g}): the velocity grows without "
                    "bound",
                    step=self.solver.steps, time=self.solver.time, field="u",
                )
        cfl = self.solver.cfl_number(dt)
        if cfl > self.config.time.max_cfl:
            raise SimulationDiverged(
                f"CFL number {cfl:.3g} exceeds max_cfl = {self.config.time.max_cfl}",
                step=self.solver.steps,
                time=self.solver.time,
                field="u",
            )
        return cfl

    def run(self, steps: int | None = None) -> dict:
        """Advance ``steps`` time steps, observing as the case asks. By default the run goes
        on to the case's last step, ``[time] steps`` (after a restart: the rest of it)."""
        if steps is None:
            steps = max(self.config.time.steps - self.solver.steps, 0)
        self.steps_to_run = steps
        # Set (equal on every rank) by an observer once the case's quantities have settled.
        self.settled: str | None = None
        solver = self.solver
        self.log(
            f"case {self.config.case.name}: {self.decomposition!r}, "
            f"{self.comm.Get_size()} ranks, {steps} steps from step {solver.steps}"
        )
        step_times, iteration_times = [], []  # the solver's step; the whole iteration
        first_phases: dict[str, float] = {}
        self.cfl = solver.cfl_number(self._time_step())
        watchers = self.observers = observers.build(self.config)
        for observer in watchers:
            if observer.name in self._restored_states:
                observer.restore_state(self, self._restored_states[observer.name])
            observer.start(self)
        progress = runtime.progress_bar(f"{self.config.case.name}", steps)
        with progress as advance, runtime.StopRequests() as stop:
            for _ in range(steps):
                dt = self._time_step()
                if not math.isfinite(dt):
                    self._check_finite()
                self.decomposition.barrier()
                started = time.perf_counter()
                solver.step(dt)
                step_times.append(time.perf_counter() - started)
                if len(step_times) == 1:  # the phases of the first step: mostly compiling
                    first_phases = solver.phase_seconds()
                self.dt, self.step_seconds = dt, step_times[-1]
                self.cfl = self._check(dt)
                for observer in watchers:
                    if observer.due(solver.steps):
                        observer.observe(self)
                iteration_times.append(time.perf_counter() - started)
                advance(1)
                if self.decomposition.maximum(stop.number):
                    self._stop(int(self.decomposition.maximum(stop.number)), watchers)
                if solver.finished():  # a steady solver at its target: a normal end
                    self.log(f"solver finished after step {solver.steps}")
                    break
                if self.settled:  # the case's quantities have settled: a normal end
                    self.log(f"settled after step {solver.steps}: {self.settled}")
                    break
        if not steps:
            self.dt = 0.0
        for observer in watchers:
            observer.finish(self)
        return self._summary(step_times, iteration_times, watchers, first_phases)

    def _stop(self, number: int, watchers) -> None:
        """End the run on every rank after a stop signal: SIGTERM and SIGUSR1 first write a
        checkpoint, so ``--restart latest`` goes on from this step (collective)."""
        import signal

        name = signal.Signals(number).name
        checkpoint = ""
        if number != signal.SIGINT:
            for observer in watchers:
                if observer.name == "checkpoints":
                    observer.observe(self)
                    checkpoint = str(observer.last or "")
        for observer in watchers:
            observer.close(self)
        checkpoint = agreement.on_root(self.comm, lambda: checkpoint, share=True)
        self.log(f"stopped by {name} after step {self.solver.steps}")
        error = RunInterrupted(
            name, step=self.solver.steps, checkpoint=checkpoint, exit_code=128 + number
        )
        agreement.agree(self.comm, error)  # every rank raises it: printed once

    def _summary(self, step_times, iteration_times, watchers, first_phases) -> dict:
        solver = self.solver
        total = float(np.sum(step_times))
        # The steps after the first by phase (the first compiles the kernels: its own row).
        first = float(step_times[0]) if step_times else 0.0
        phases = {k: self.decomposition.maximum(v - first_phases.get(k, 0.0))
                  for k, v in solver.phase_seconds().items()}
        phases["other"] = max(total - first - sum(phases.values()), 0.0)
        summary = {
            "case": self.config.case.name,
            "ranks": self.comm.Get_size(),
            **solver.layout(),
            "steps": len(step_times),
            "final_step": solver.steps,
            "final_time": solver.time,
            "settled": self.settled,  # why the run ended before its last step, if it did
            "wall_time": total,
            "set_up": self.decomposition.maximum(self.set_up_seconds),
            "first_step": self.decomposition.maximum(first),
            "time_per_step": {
                "median": float(np.median(step_times)) if step_times else 0.0,
                "min": float(np.min(step_times)) if step_times else 0.0,
            },
            # Step, checks, outputs and visualisation: what a user waits for per step. The
            # mean takes in the steps that draw or write; the first iteration (compiling,
            # attaching streams) is left out of it when there are others.
            "time_per_iteration": {
                "median": float(np.median(iteration_times)) if iteration_times else 0.0,
                "mean": float(np.mean(iteration_times[1:] or iteration_times or [0.0])),
            },
            "phases": phases,
            "checkpoint": _last_checkpoint(watchers),
            "final_statistics": self.history[-1] if self.history else {},
            "mpi": runtime.mpi_info(self.comm),
            "peak_rss_bytes": _peak_memory(self.comm),
        }
        for observer in watchers:
            summary.update(observer.summary() or {})
        def write() -> None:
            with replacing(self.output / "timings.json") as temporary:
                temporary.write_text(json.dumps(summary, indent=2, default=float) + "\n")

        agreement.on_root(self.comm, write)  # a failure ends every rank, together
        self.log(
            f"done: {summary['steps']} steps, {summary['time_per_step']['median']:.4f} "
            f"s/step (median)"
        )
        agreement.agree(self.comm, self._log_problem)
        return summary

    def free(self) -> None:
        """Close the log, release communicators and the folder (collective)."""
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        self.solver.free()
        self.decomposition.free()


def _last_checkpoint(watchers) -> str | None:
    last = next((w.last for w in watchers if w.name == "checkpoints"), None)
    return None if last is None else str(last)


def _peak_memory(comm) -> dict:
    """Peak resident memory of rank 0 and of the other ranks (collective)."""
    import resource

    peaks = gather_small(comm, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    if peaks is None:
        return {}
    others = peaks[1:] or peaks
    return {
        "rank_0": peaks[0],
        "others_max": max(others),
        "others_median": float(np.median(others)),
    }


def _check_memory(solver, config: Config, ranks: int) -> None:
    """Refuse, before allocating, a case that cannot fit: what it needs per rank, what this
    node has, and a rank count that would fit on nodes like it (one rank per core)."""
    import os

    estimate, available = solver.memory_per_rank(config, ranks), runtime.available_memory()
    if estimate is None or available is None:
        return
    each, root = estimate
    if each * (ranks - 1) + root <= available:
        return
    gib, cores = 2**30, os.cpu_count() or 1
    need = (
        f"{config.source}: solver {config.case.solver!r} would need about "
        f"{each / gib:.1f} GiB on each of {ranks} rank(s) and {root / gib:.1f} GiB on rank 0 "
        f"(which also draws images); this node has "
        f"{available / gib:.1f} GiB available"
    )

    def fits(count: int) -> bool:  # every node full of ranks, rank 0's node too
        each, root = solver.memory_per_rank(config, count)
        return each * cores <= available and root + each * (min(cores, count) - 1) <= available

    fitting = ranks
    while fitting < 2**24 and not fits(fitting):
        fitting *= 2
    if not fits(fitting):
        raise ConfigError(f"{need}: no rank count fits on nodes like this one")
    each_then = solver.memory_per_rank(config, fitting)[0]
    raise ConfigError(
        f"{need}: on nodes like this one ({cores} cores), {fitting} ranks would need "
        f"{each_then / gib:.2f} GiB each"
    )

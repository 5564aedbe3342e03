"""``tachyflow run``: a case from its configuration to its output folder.

The time loop alternates ``solver.step(dt)`` with observers that run every N steps:
statistics (``stats.csv``), checkpoints (``checkpoints/``), images (``images/``), and a
divergence check after every step. Output folder::

    config.toml     the resolved configuration
    log.txt         what rank 0 printed, with times
    stats.csv       step, time, dt, CFL, energy, dissipation, bulk velocity, wall shear, ...
    timings.json    wall time per phase (FFT, transposes, TDMA, advection, ...)
    fields.bp/      ADIOS2 BP5 series of u, v, w, p at cell centres (Fides + VTX attributes)
    fields.pvd      the same steps as VTK XML files in fields_vtk/ (.vti, or .vtr if stretched)
    checkpoints/    step_XXXXXXXX.npz (the last two)
    images/         velocity slices and the statistics history (PNG)
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from pathlib import Path

import numpy as np

from tachyflow import runtime
from tachyflow.config import Config
from tachyflow.errors import SimulationDiverged
from tachyflow.io.checkpoint import read_checkpoint, write_checkpoint
from tachyflow.io.fields import FieldWriter
from tachyflow.io.files import replacing
from tachyflow.io.vtk_files import VTKFieldWriter
from tachyflow.numerics import stencils
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import PencilDecomposition
from tachyflow.solvers.incompressible import Forcing, IncompressibleSolver

STAT_COLUMNS = (
    "step",
    "time",
    "dt",
    "cfl",
    "kinetic_energy",
    "dissipation",
    "bulk_velocity",
    "wall_shear",
    "pressure_gradient",
    "max_divergence",
)


def build(config: Config, comm, planning: str = "measure"):
    """Decomposition, grid and solver of a case (collective)."""
    grid_config = config.grid
    grid = StaggeredGrid(
        grid_config.cells,
        grid_config.lengths,
        periodic_y=not grid_config.walls,
        stretching=grid_config.stretching,
    )
    proc_grid = None if config.parallel.proc_grid == (0, 0) else config.parallel.proc_grid
    decomposition = PencilDecomposition(
        grid_config.cells, proc_grid, comm, periodic=(True, not grid_config.walls, True)
    )
    forcing = Forcing(config.flow.forcing, config.flow.forcing_value)
    solver = IncompressibleSolver(
        decomposition, grid, config.flow.viscosity, forcing, planning=planning
    )
    return decomposition, solver


def set_initial_condition(config: Config, solver: IncompressibleSolver) -> None:
    """Fill the velocity from ``[flow] initial`` (rank-independent by construction)."""
    flow = config.flow
    height = config.grid.lengths[1]
    if flow.forcing == "flow-rate":
        bulk = flow.forcing_value
    elif flow.forcing == "pressure-gradient" and config.grid.walls:
        bulk = flow.forcing_value * height**2 / (12.0 * flow.viscosity)
    else:
        bulk = 0.0

    def laminar(x, y, z):
        return 6.0 * bulk * y * (height - y) / height**2 + 0 * x + 0 * z

    if flow.initial == "rest":
        solver.set_velocity(0.0, 0.0, 0.0)
    elif flow.initial == "poiseuille":
        solver.set_velocity(laminar, 0.0, 0.0)
    elif flow.initial == "taylor-green":
        solver.set_velocity(
            lambda x, y, z: np.sin(x) * np.cos(y) * np.cos(z),
            lambda x, y, z: -np.cos(x) * np.sin(y) * np.cos(z),
            0.0,
        )
    else:  # perturbed-channel: laminar profile plus random-phase waves and streaks
        rng = np.random.default_rng(flow.seed)
        lx, _, lz = config.grid.lengths
        modes = [
            (kx, kz, *rng.uniform(0, 2 * np.pi, 3)) for kx in range(1, 4) for kz in range(1, 4)
        ]
        amplitude = flow.perturbation * max(bulk, 1.0) / len(modes) ** 0.5

        def wave(component):
            def field(x, y, z):
                envelope = (y * (height - y) / (height / 2) ** 2) ** 2
                total = 0.0
                for kx, kz, *phases in modes:
                    total = total + np.cos(
                        2 * np.pi * (kx * x / lx + kz * z / lz) + phases[component]
                    )
                return amplitude * envelope * total

            return field

        solver.set_velocity(lambda x, y, z: laminar(x, y, z) + wave(0)(x, y, z), wave(1), wave(2))


class Simulation:
    """Runs one case into an output folder.

    Parameters
    ----------
    config : Config
        The case.
    output : path
        Output folder (created).
    comm : mpi4py.MPI.Intracomm
        Ranks to run on.
    restart : path, optional
        Checkpoint to continue from.

    Notes
    -----
    Construction and :meth:`run` are collective; only rank 0 writes files and prints.
    """

    def __init__(self, config: Config, output, comm=None, restart=None, planning: str = "measure"):
        self.config = config
        self.comm = runtime.world() if comm is None else comm
        self.output = Path(output)
        self.root = self.comm.Get_rank() == 0
        self.decomposition, self.solver = build(config, self.comm, planning)
        self.history: list[dict] = []
        if restart is None:
            set_initial_condition(config, self.solver)
        else:
            self._restore(restart)
        self._log_lines: list[str] = []
        self._fields = None
        self._vtk_fields = None
        self._append_fields = restart is not None
        if self.root:
            self.output.mkdir(parents=True, exist_ok=True)
            (self.output / "config.toml").write_text(config.to_toml())
        self.acoustics = None
        self._visualisation = None  # the adaptor's summary after a run

    # -- output ----------------------------------------------------------------------------

    def log(self, message: str) -> None:
        """Append a line to ``log.txt`` (rank 0)."""
        if self.root:
            self._log_lines.append(f"{time.strftime('%H:%M:%S')} {message}")
            with replacing(self.output / "log.txt") as temporary:
                temporary.write_text("\n".join(self._log_lines) + "\n")

    def _gather(self, name: str):
        field = getattr(self.solver, name)
        return self.decomposition.gather_global(self.solver.halo.interior(field), "y")

    def _restore(self, path) -> None:
        content = read_checkpoint(path, self.config.grid.cells)
        fields = {
            name: self.decomposition.scatter_global(content[name], "y") for name in ("u", "v", "w")
        }
        self.solver.set_velocity(fields["u"], fields["v"], fields["w"])
        self.solver.halo.interior(self.solver.p)[...] = self.decomposition.scatter_global(
            content["p"], "y"
        )
        self.solver.time = float(content["time"])
        self.solver.steps = int(content["step"])
        if "extra_pressure_gradient" in content:
            self.solver.pressure_gradient = float(content["extra_pressure_gradient"])

    def write_checkpoint(self) -> Path | None:
        """Write a checkpoint of the current state (collective; rank 0 writes)."""
        fields = {name: self._gather(name) for name in ("u", "v", "w", "p")}
        if not self.root:
            return None
        return write_checkpoint(
            self.output / "checkpoints",
            self.solver.steps,
            self.solver.time,
            fields,
            {"pressure_gradient": self.solver.pressure_gradient},
        )

    def write_statistics(self) -> None:
        """Rewrite ``stats.csv`` from the history (rank 0)."""
        if not self.root:
            return
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=STAT_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(self.history)
        with replacing(self.output / "stats.csv") as temporary:
            temporary.write_text(text.getvalue())

    def write_images(self) -> None:
        """Velocity slices and the statistics history as PNG (collective; rank 0 draws)."""
        u = self._gather("u")
        if not self.root:
            return
        from tachyflow.insitu.plots import plot_history, plot_slices

        folder = self.output / "images"
        plot_slices(
            u,
            self.solver.grid,
            self.solver.steps,
            self.solver.time,
            folder / f"u_step_{self.solver.steps:08d}.png",
        )
        if self.history:
            plot_history(self.history, folder / "statistics.png")

    def write_fields(self) -> None:
        """Append the cell-centred fields to ``fields.bp`` (collective; rank 0 writes)."""
        solver = self.solver
        interior = solver.halo.interior
        centred = {
            "u": 0.5 * (interior(solver.u) + stencils.shifted(solver.u, di=-1)),
            "v": 0.5 * (interior(solver.v) + stencils.shifted(solver.v, dj=-1)),
            "w": 0.5 * (interior(solver.w) + stencils.shifted(solver.w, dk=-1)),
            "p": interior(solver.p),
        }
        gathered = {
            name: self.decomposition.gather_global(values, "y") for name, values in centred.items()
        }
        if not self.root:
            return
        if self._fields is None:
            self._fields = FieldWriter(
                self.output / "fields.bp", solver.grid, append=self._append_fields
            )
            if self.config.output.vtk_fields:
                self._vtk_fields = VTKFieldWriter(
                    self.output, solver.grid, append=self._append_fields
                )
        self._fields.write(solver.steps, solver.time, gathered)
        if self._vtk_fields is not None:
            self._vtk_fields.write(solver.steps, solver.time, gathered)

    # -- the loop --------------------------------------------------------------------------

    def _time_step(self) -> float:
        if self.config.time.dt > 0:
            return self.config.time.dt
        return self.solver.stable_time_step(self.config.time.cfl)

    def _check_finite(self) -> None:
        """Stop with SimulationDiverged if a velocity component holds NaN or infinity."""
        solver = self.solver
        for name in ("u", "v", "w"):
            finite = bool(np.isfinite(solver.halo.interior(getattr(solver, name))).all())
            if not self.decomposition.all(finite):
                raise SimulationDiverged(
                    "velocity is not finite", step=solver.steps, time=solver.time, field=name
                )

    def _check(self, dt: float) -> float:
        """Stop with SimulationDiverged on non-finite values or a CFL beyond the limit."""
        self._check_finite()
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
        """Advance ``steps`` time steps (default the case's) and write the outputs."""
        steps = self.config.time.steps if steps is None else steps
        output = self.config.output
        solver = self.solver
        self.log(
            f"case {self.config.case.name}: {self.decomposition!r}, "
            f"{self.comm.Get_size()} ranks, {steps} steps from step {solver.steps}"
        )
        step_times, iteration_times = [], []  # the solver's step; the whole iteration
        cfl = solver.cfl_number(self._time_step())
        acoustics = self._start_acoustics(steps)
        visualisation = self._start_visualisation()
        with runtime.progress_bar(f"{self.config.case.name}", steps) as advance:
            for _ in range(steps):
                dt = self._time_step()
                if not math.isfinite(dt):
                    self._check_finite()
                self.decomposition.barrier()
                started = time.perf_counter()
                solver.step(dt)
                step_times.append(time.perf_counter() - started)
                cfl = self._check(dt)
                every = output.statistics_every
                if every and solver.steps % every == 0:
                    self._record(dt, cfl)
                if output.checkpoint_every and solver.steps % output.checkpoint_every == 0:
                    self.write_checkpoint()
                if output.images_every and solver.steps % output.images_every == 0:
                    self.write_images()
                if output.fields_every and solver.steps % output.fields_every == 0:
                    self.write_fields()
                if acoustics and solver.steps % self.config.acoustics.every == 0:
                    acoustics.sample()
                if visualisation:
                    visualisation.after_step(self._metrics(dt, cfl, step_times[-1]))
                iteration_times.append(time.perf_counter() - started)
                advance(1)
        if not self.history or self.history[-1]["step"] != solver.steps:
            self._record(dt if steps else 0.0, cfl)
        checkpoint = self.write_checkpoint()
        self.write_images()
        if output.fields_every and solver.steps % output.fields_every:
            self.write_fields()  # the final state, unless the loop just wrote it
        if visualisation:
            visualisation.close()
            self._visualisation = visualisation.summary()
        summary = self._summary(step_times, iteration_times, checkpoint)
        if acoustics:
            summary["acoustics"] = acoustics.finish()
            for name, level in (summary["acoustics"] or {}).get("observers", {}).items():
                self.log(f"acoustics: {name} OASPL {level:.1f} dB")
        return summary

    def _start_visualisation(self):
        """The adaptor of ``[insitu]``, when the case has pipelines or a monitor."""
        section = self.config.insitu
        if not section.pipeline and not section.monitor:
            return None
        from tachyflow.insitu.adaptor import VisualisationAdaptor

        return VisualisationAdaptor(section, self.solver, self.output, self.history)

    def _metrics(self, dt: float, cfl: float, seconds: float) -> dict:
        """What the live viewer shows after a step."""
        metrics = {
            "step": self.solver.steps,
            "time": self.solver.time,
            "dt": dt,
            "cfl": cfl,
            "time_per_step": seconds,
        }
        if self.history:
            metrics["kinetic_energy"] = self.history[-1]["kinetic_energy"]
        return metrics

    def _start_acoustics(self, steps: int):
        """The in-run FW-H surface of ``[acoustics]``, sampled once now (collective)."""
        section = self.config.acoustics
        if section.surface == "none":
            return None
        from tachyflow.acoustics.in_run import InRunAcoustics

        duration = section.duration or steps * self.config.time.dt
        base = Path(self.config.source).parent if Path(self.config.source).is_file() else "."
        self.acoustics = InRunAcoustics(section, self.solver, self.output, duration, base)
        self.acoustics.sample()
        return self.acoustics

    def _record(self, dt: float, cfl: float) -> None:
        statistics = self.solver.statistics()
        statistics.update(dt=dt, cfl=cfl)
        statistics.setdefault("wall_shear", math.nan)
        self.history.append(statistics)
        self.write_statistics()
        self.log(
            "step {step} t={time:.5g} dt={dt:.3g} CFL={cfl:.3f} E={kinetic_energy:.6g} "
            "div={max_divergence:.2e}".format(**statistics)
        )

    def _summary(self, step_times, iteration_times, checkpoint) -> dict:
        solver, poisson = self.solver, self.solver.poisson
        total = float(np.sum(step_times))
        phases = {
            "fft": poisson.timer.seconds["fft"],
            "transposes": poisson.timer.seconds["transpose"],
            "tdma": poisson.timer.seconds["tdma"] + solver.timer.seconds["implicit"],
            "advection": solver.timer.seconds["advection"],
            "diffusion": solver.timer.seconds["diffusion"],
        }
        phases = {k: self.decomposition.maximum(v) for k, v in phases.items()}
        phases["other"] = max(total - sum(phases.values()), 0.0)
        summary = {
            "case": self.config.case.name,
            "ranks": self.comm.Get_size(),
            "proc_grid": list(self.decomposition.proc_grid),
            "grid": list(self.config.grid.cells),
            "steps": len(step_times),
            "final_step": solver.steps,
            "final_time": solver.time,
            "wall_time": total,
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
            "checkpoint": str(checkpoint) if checkpoint else None,
            "final_statistics": self.history[-1] if self.history else {},
            "mpi": runtime.mpi_info(self.comm),
        }
        if self._visualisation is not None:
            summary["visualisation"] = self._visualisation
        if self.root:
            with replacing(self.output / "timings.json") as temporary:
                temporary.write_text(json.dumps(summary, indent=2, default=float) + "\n")
        self.log(
            f"done: {summary['steps']} steps, {summary['time_per_step']['median']:.4f} "
            f"s/step (median)"
        )
        return summary

    def free(self) -> None:
        """Close the field series and release communicators (collective)."""
        if self._fields is not None:
            self._fields.close()
            self._fields = None
        self.solver.free()
        self.decomposition.free()

"""The turbulence-statistics observer: mean profiles, Reynolds stresses and wall units.

Turned on by ``[statistics] every``. From ``start_step`` / ``start_time`` on, every
``every`` steps, the cell-centred u, v, w, p are sampled and averaged over time and over
the planes of constant wall-normal coordinate:

- every run keeps one station per wall-normal (radial) position: each sample is a batch
  of the plane's values (x and z, or x and θ on a cylindrical grid), reduced over the
  ranks and merged into running moments (:class:`~tachyflow.numerics.moments.Moments`:
  means, the full covariance of u, v, w, p, third and fourth moments of each). Written:
  ``profiles.csv`` (one row per station), ``statistics.json`` (u_tau, Re_tau, C_f,
  U_c / U_b — null without walls —, the averaging window, samples) and
  ``images/profiles.png`` (U+ against y+ with the law of the wall, rms profiles, the shear
  stress budget); in a large-eddy simulation ``profiles.csv`` also has each station's
  mean ν_t / ν (``nu_t_over_nu``);
- with ``homogeneous = []`` every cell also keeps its own running mean and variance
  (Welford), written as mean and rms fields (``statistics/fields.pvd``: a ``.pvtr`` of
  one piece per rank per output; the profiles then average a flow that need not be
  homogeneous in those planes).

Outputs are written every ``output_every`` steps (whether or not a sample falls on that
step) and after the last step. The running state is part of every checkpoint
(:meth:`checkpoint_state`), so a restarted run goes on averaging as if it had never
stopped; the moments are merged pairwise, so the averages do not depend on the number of
ranks beyond round-off.
"""

from __future__ import annotations

import csv
import json

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.files import replacing
from tachyflow.numerics.moments import Moments, central_sums
from tachyflow.observers import Observer, ObserverState, register
from tachyflow.solvers.base import PENCIL_FIELDS

VARIABLES = ("u", "v", "w", "p")
STRESSES = {"uu": (0, 0), "vv": (1, 1), "ww": (2, 2), "uv": (0, 1), "uw": (0, 2),
            "vw": (1, 2), "pp": (3, 3)}
KAPPA, CONSTANT = 0.41, 5.2  # the log law drawn for comparison
WALL_KEYS = ("wall_shear_stress", "u_tau", "Re_tau", "Cf", "Uc_over_Ub")


@register
class TurbulenceStatistics(Observer):
    """Running turbulence statistics of the case's ``[statistics]`` (see the module)."""

    name = "turbulence"
    needs = frozenset({PENCIL_FIELDS})

    def __init__(self, section, viscosity: float, reference=None):
        self.reference = reference  # (name, columns) of profiles to compare with, or None
        self.every = section.every
        self.start_step, self.start_time = section.start_step, section.start_time
        self.keeps_cells = not section.homogeneous
        self.output_every = section.output_every
        self.viscosity = viscosity
        self.moments: Moments | None = None  # per station: planes and time
        self.cells: dict[str, np.ndarray] = {}  # per cell: mean and M2 (no homogeneity)
        self.window = {"start_time": None, "start_step": None, "end_time": None,
                       "end_step": None, "samples": 0}
        self._field_files = None  # VTKFieldWriter of the mean and rms fields
        self._written = None  # the step of the last output
        # A large-eddy simulation's mean ν_t per station (its solver has the "nu_t" field).
        self.eddy_viscosity: np.ndarray | None = None

    @classmethod
    def from_case(cls, config, options):
        if not config.statistics.every:
            return None
        cls.require_needs(config, "[statistics]")
        return cls(config.statistics, config.flow.viscosity, _reference(config))

    def due(self, step: int) -> bool:
        """A sampling step (every ``every``) or an output step (every ``output_every``)."""
        return step % self.every == 0 or self._output_due(step)

    def _output_due(self, step: int) -> bool:
        return bool(self.output_every) and step % self.output_every == 0

    # -- sampling ----------------------------------------------------------------------------

    def start(self, run) -> None:
        if self.moments is None:
            self.moments = Moments.empty(len(VARIABLES), run.solver.grid.shape[1])
        if self.keeps_cells and not self.cells:
            shape = (len(VARIABLES), *run.solver.piece_layout().shape)
            self.cells = {"mean": np.zeros(shape), "m2": np.zeros(shape)}
        if "nu_t" in getattr(run.solver, "fields", ()) and self.eddy_viscosity is None:
            self.eddy_viscosity = np.zeros(run.solver.grid.shape[1])

    def observe(self, run) -> None:
        solver = run.solver
        started = solver.steps >= self.start_step and solver.time >= self.start_time
        if started and solver.steps % self.every == 0:
            self._sample(solver)
        if self._output_due(solver.steps):
            self._write(run)

    def _sample(self, solver) -> None:
        """Merge the current state into the running moments (collective)."""
        values = np.stack([solver.cell_field(name) for name in VARIABLES])
        self._sample_planes(solver.decomposition, values)
        if self.keeps_cells:
            self._sample_cells(values)
        if self.eddy_viscosity is not None:  # the running mean of each station's plane
            decomposition, eddy = solver.decomposition, solver.cell_field("nu_t")
            count = decomposition.sum(eddy.shape[0] * eddy.shape[2])
            plane = decomposition.sum_arrays(eddy.sum(axis=(0, 2))) / max(count, 1.0)
            self.eddy_viscosity += (plane - self.eddy_viscosity) / (self.window["samples"] + 1)
        window = self.window
        if window["samples"] == 0:
            window["start_time"], window["start_step"] = solver.time, solver.steps
        window["end_time"], window["end_step"] = solver.time, solver.steps
        window["samples"] += 1

    def _sample_planes(self, decomposition, values: np.ndarray) -> None:
        """Merge one sample: the planes' values as one batch per station (collective)."""
        count = decomposition.sum(values.shape[1] * values.shape[3])
        mean = decomposition.sum_arrays(values.sum(axis=(1, 3))) / max(count, 1.0)
        powers, cross = central_sums(values, mean[:, None, :, None], (1, 3))
        powers = decomposition.sum_arrays(powers)
        cross = decomposition.sum_arrays(cross)
        stations = values.shape[2]
        batch = Moments.of_batch(np.full(stations, count), mean, powers, cross)
        self.moments = self.moments.merge(batch)

    def _sample_cells(self, values: np.ndarray) -> None:
        """Welford's update of each cell's mean and second central sum."""
        samples = self.window["samples"] + 1
        delta = values - self.cells["mean"]
        self.cells["mean"] += delta / samples
        self.cells["m2"] += delta * (values - self.cells["mean"])

    def finish(self, run) -> None:
        if self._written != run.solver.steps:  # unless the loop just wrote them
            self._write(run)

    # -- restart -----------------------------------------------------------------------------

    def checkpoint_state(self, run) -> ObserverState:
        window = np.array(
            [np.nan if value is None else value for value in self.window.values()], float
        )
        replicated = {**self.moments.as_arrays(), "window": window}
        if self.eddy_viscosity is not None:
            replicated["eddy_viscosity"] = self.eddy_viscosity
        pieces = {f"{key}_{name}": self.cells[key][index] for key in self.cells
                  for index, name in enumerate(VARIABLES)}
        return ObserverState(replicated=replicated, pieces=pieces)

    def restore_state(self, run, state: ObserverState) -> None:
        window = state.replicated["window"]
        for key, value in zip(list(self.window), window, strict=True):
            counted = key.endswith("step") or key == "samples"  # integers, stored as floats
            self.window[key] = None if np.isnan(value) else int(value) if counted else value
        self.moments = Moments.from_arrays(state.replicated)
        if "eddy_viscosity" in state.replicated:
            self.eddy_viscosity = np.array(state.replicated["eddy_viscosity"])
        if self.keeps_cells:
            if not state.pieces:  # the same on every rank: the checkpoint's global arrays
                raise ConfigError(
                    "statistics.homogeneous: the checkpoint's run averaged over planes only, "
                    "without per-cell statistics to continue with homogeneous = []; restart "
                    "with the homogeneous directions it had, or start a new run"
                )
            self.cells = {
                key: np.stack([state.pieces[f"{key}_{name}"] for name in VARIABLES])
                for key in ("mean", "m2")
            }

    def summary(self) -> dict:
        return {"turbulence_statistics": dict(self.window)}

    # -- output ------------------------------------------------------------------------------

    def _write(self, run) -> None:
        """``profiles.csv``, ``statistics.json``, the plot, and the mean and rms fields when
        every cell keeps its own (collective); a line in the log while nothing is sampled."""
        self._written = run.solver.steps
        if not self.window["samples"]:
            run.log(
                f"turbulence statistics: no samples yet (from step {self.start_step}, "
                f"time {self.start_time:g}, every {self.every} steps)"
            )
            return
        table, summary = self._profiles(run.solver.grid)
        if self.reference is not None and "U_plus" in table:
            summary["reference"] = _compared(self.reference, table)
        if run.root:
            _write_profiles(run.output / "profiles.csv", table)
            _write_json(run.output / "statistics.json", summary)
            _plot_profiles(run.output / "images" / "profiles.png", table, summary,
                           self.reference)
        if self.keeps_cells:
            self._write_fields(run)

    def _profiles(self, grid) -> tuple[dict[str, np.ndarray], dict]:
        """The columns of ``profiles.csv`` and the summary, from the moments (every rank)."""
        moments, nu = self.moments, self.viscosity
        coordinate = grid.centres_y
        covariance = moments.covariance()
        table = {grid.axis_names[1]: coordinate}
        table.update({name.upper(): moments.mean[index] for index, name in enumerate(VARIABLES)})
        table.update({name: covariance[a, b] for name, (a, b) in STRESSES.items()})
        for index, name in enumerate(VARIABLES):
            table[f"{name}_rms"] = np.sqrt(np.maximum(covariance[index, index], 0.0))
        if self.eddy_viscosity is not None:
            table["nu_t_over_nu"] = self.eddy_viscosity / nu
        for kind, values in (("skewness", moments.skewness()), ("flatness", moments.flatness())):
            for index, name in enumerate(VARIABLES[:3]):
                table[f"{name}_{kind}"] = values[index]
        bulk = float(np.dot(table["U"], grid.volume_weights_y))
        summary = {"bulk_velocity": bulk, "viscosity": nu, **self.window}
        summary.update(dict.fromkeys(WALL_KEYS))  # null without walls
        distance = grid.wall_distances_y
        if distance is not None:
            stress = nu * _mean_wall_slope(table["U"], distance)
            u_tau = float(np.sqrt(abs(stress)))
            centre = float(np.mean(table["U"][distance == distance.max()]))
            summary.update({
                "wall_shear_stress": stress,
                "u_tau": u_tau,
                "Re_tau": u_tau * grid.outer_scale / nu,
                "Cf": 2 * stress / bulk**2 if bulk else float("nan"),
                "Uc_over_Ub": centre / bulk if bulk else float("nan"),
            })
            table["wall_distance"] = distance
            if u_tau > 0:
                table["y_plus"] = distance * u_tau / nu
                table["U_plus"] = table["U"] / u_tau
            table["viscous_stress"] = nu * np.gradient(table["U"], coordinate)
            table["reynolds_stress"] = -table["uv"]
            steady = _steady_total_stress(grid, coordinate)
            if steady is not None:  # what the two add up to once fully developed
                table["steady_total_stress"] = stress * steady
        return table, summary

    def _write_fields(self, run) -> None:
        """Mean and rms fields of every cell, one VTK piece per rank (collective)."""
        from tachyflow.io.vtk_files import VTKFieldWriter

        solver, samples = run.solver, self.window["samples"]
        fields = {f"mean_{name}": self.cells["mean"][i] for i, name in enumerate(VARIABLES)}
        fields.update({f"rms_{name}": np.sqrt(self.cells["m2"][i] / samples)
                       for i, name in enumerate(VARIABLES)})
        if self._field_files is None:  # a restart keeps the outputs up to its checkpoint
            self._field_files = VTKFieldWriter(
                run.comm, run.output / "statistics", solver.grid, solver.piece_layout(),
                run.first_step if run.restarted else None,
            )
        self._field_files.write(solver.steps, solver.time, fields)


def _steady_total_stress(grid, coordinate: np.ndarray) -> np.ndarray | None:
    """The total shear stress of a fully developed flow over the wall stress: linear, from
    1 at the (lower) wall of a channel to -1 at the other, -r/R in a pipe (r outwards);
    None for an annulus, whose balance is not linear."""
    if getattr(grid, "through_axis", None) is False:
        return None
    if getattr(grid, "through_axis", False):
        return -coordinate / grid.radius
    return 1.0 - coordinate / grid.outer_scale


def _mean_wall_slope(profile: np.ndarray, distance: np.ndarray) -> float:
    """``dU/dn`` at the walls (n from the wall into the flow), averaged over the walls the
    profile touches: the parabola through U = 0 at the wall and the first two centres."""
    slopes = []
    for first, second in ((0, 1), (-1, -2)):
        if distance[first] < distance[second]:  # a wall at this end
            d1, d2 = distance[first], distance[second]
            u1, u2 = profile[first], profile[second]
            slopes.append((u1 * d2**2 - u2 * d1**2) / (d1 * d2 * (d2 - d1)))
    return float(np.mean(slopes))


def _write_profiles(path, table: dict[str, np.ndarray]) -> None:
    with replacing(path) as temporary, temporary.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(list(table))
        for row in zip(*table.values(), strict=True):
            writer.writerow([f"{value:.10g}" for value in row])


def _write_json(path, document: dict) -> None:
    with replacing(path) as temporary:
        temporary.write_text(json.dumps(document, indent=2) + "\n")


def _reference(config):
    """``(name, columns)`` of ``[statistics] reference``: a built-in data set by name
    (``tachyflow/data/channel/NAME.csv``) or a CSV file (from the case's folder); None when
    the case names none. ConfigError for a file that is not there or lacks y_plus, u_plus."""
    from tachyflow.io.files import data_table

    name = config.statistics.reference
    if not name:
        return None
    return name, data_table(config, "statistics.reference", "channel", name,
                            ("y_plus", "u_plus"), "mkm-395")


def _compared(reference, table: dict[str, np.ndarray]) -> dict:
    """The largest relative difference of U+ from the reference's beyond y+ = 30 (one
    wall's half: the channel's two halves fall on one curve)."""
    name, columns = reference
    y_plus, u_plus = table["y_plus"], table["U_plus"]
    beyond = (y_plus >= 30) & (y_plus <= columns["y_plus"].max())
    expected = np.interp(y_plus[beyond], columns["y_plus"], columns["u_plus"])
    deviation = np.abs(u_plus[beyond] - expected) / expected
    return {"name": name, "U_plus_largest_deviation_beyond_y_plus_30":
            float(deviation.max()) if deviation.size else None}


def _plot_profiles(path, table: dict[str, np.ndarray], summary: dict, reference=None) -> None:
    """U+ against y+ with the law of the wall (and a reference's profiles), rms profiles,
    the shear stress budget."""
    from tachyflow.io.figures import new_subplots, save_figure

    figure, axes = new_subplots(1, 3, figsize=(14, 4.2))
    u_tau = summary.get("u_tau", 0.0)
    if u_tau:
        y_plus = table["y_plus"]  # both walls of a channel fall on one curve
        order = np.argsort(y_plus)
        axes[0].semilogx(y_plus[order], table["U_plus"][order], "o", ms=3, label="tachyflow")
        line = np.logspace(np.log10(max(y_plus.min(), 0.1)), np.log10(y_plus.max()), 100)
        axes[0].semilogx(line[line < 12], line[line < 12], "k--", lw=1, label="U+ = y+")
        axes[0].semilogx(line[line > 8], np.log(line[line > 8]) / KAPPA + CONSTANT, "k:",
                         lw=1, label=f"ln(y+)/{KAPPA} + {CONSTANT}")
        if reference is not None:
            name, columns = reference
            axes[0].semilogx(columns["y_plus"][1:], columns["u_plus"][1:], "r-", lw=1.2,
                             label=name)
            for index, stress in enumerate(("uu_plus", "vv_plus", "ww_plus")):
                if stress in columns:
                    axes[1].plot(columns["y_plus"], np.sqrt(columns[stress]), "-", lw=1,
                                 color=f"C{index}", label=f"{name} {stress[0]}")
        axes[0].set_xlabel("y+")
        axes[0].set_ylabel("U+")
        axes[0].set_title(f"Re_tau = {summary['Re_tau']:.1f}, {summary['samples']} samples")
        for index, name in enumerate(("u", "v", "w")):
            axes[1].plot(y_plus[order], table[f"{name}_rms"][order] / u_tau, ".",
                         color=f"C{index}", label=name)
        axes[1].set_xlabel("y+")
        axes[1].set_ylabel("rms / u_tau")
        stress = u_tau**2
        coordinate = next(iter(table.values()))
        axes[2].plot(coordinate, table["viscous_stress"] / stress, label="viscous")
        axes[2].plot(coordinate, table["reynolds_stress"] / stress, label="Reynolds -<u'v'>")
        total = (table["viscous_stress"] + table["reynolds_stress"]) / stress
        axes[2].plot(coordinate, total, "k", label="total")
        if "steady_total_stress" in table:
            axes[2].plot(coordinate, table["steady_total_stress"] / stress, "k--", lw=1,
                         label="total, fully developed")
        axes[2].set_xlabel(next(iter(table)))
        axes[2].set_ylabel("stress / u_tau²")
    else:
        coordinate = next(iter(table.values()))
        axes[0].plot(coordinate, table["U"], label="U")
        for name in ("u", "v", "w"):
            axes[1].plot(coordinate, table[f"{name}_rms"], label=name)
        axes[2].plot(coordinate, table["uv"], label="<u'v'>")
    for axis in axes:
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    save_figure(figure, path, dpi=100)

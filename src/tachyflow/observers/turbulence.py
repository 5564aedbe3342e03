"""The turbulence-statistics observer: mean profiles, Reynolds stresses and wall units.

Turned on by ``[statistics] every``. From ``start_step`` / ``start_time`` on, every
``every`` steps, the cell-centred u, v, w, p are sampled and averaged over the
homogeneous directions and over time:

- with ``homogeneous = ["x", "z"]`` (``["x", "theta"]`` on a cylindrical grid): one
  station per wall-normal (radial) position; each sample is a batch of the plane's
  values, reduced over the ranks and merged into running moments
  (:class:`~tachyflow.numerics.moments.Moments`: means, the full covariance of u, v, w, p,
  third and fourth moments of each). Written: ``profiles.csv`` (one row per station),
  ``statistics.json`` (u_tau, Re_tau, C_f, U_c / U_b, the averaging window, samples) and
  ``images/profiles.png`` (U+ against y+ with the law of the wall, rms profiles, the shear
  stress budget);
- with ``homogeneous = []``: per-cell running means and variances, written at the end as
  mean and rms fields (``statistics/fields.pvd``, a ``.pvtr`` of one piece per rank).

The running state is part of every checkpoint (:meth:`checkpoint_state`), so a restarted
run goes on averaging as if it had never stopped; the moments are merged pairwise, so the
averages do not depend on the number of ranks beyond round-off.
"""

from __future__ import annotations

import csv
import json

import numpy as np

from tachyflow import observers
from tachyflow.io.files import replacing
from tachyflow.numerics.moments import Moments, central_sums
from tachyflow.observers import Observer, ObserverState, register

VARIABLES = ("u", "v", "w", "p")
STRESSES = {"uu": (0, 0), "vv": (1, 1), "ww": (2, 2), "uv": (0, 1), "uw": (0, 2),
            "vw": (1, 2), "pp": (3, 3)}  # fmt: skip
KAPPA, CONSTANT = 0.41, 5.2  # the log law drawn for comparison


@register
class TurbulenceStatistics(Observer):
    """Running turbulence statistics of the case's ``[statistics]`` (see the module)."""

    name = "turbulence"

    def __init__(self, section, viscosity: float):
        self.every = section.every
        self.start_step, self.start_time = section.start_step, section.start_time
        self.profiles = bool(section.homogeneous)
        self.output_every = section.output_every
        self.viscosity = viscosity
        self.moments: Moments | None = None
        self.cells: dict[str, np.ndarray] = {}  # per-cell mean and M2 (no homogeneity)
        self.window = {"start_time": None, "start_step": None, "end_time": None,
                       "end_step": None, "samples": 0}  # fmt: skip

    @classmethod
    def from_case(cls, config, options):
        if not config.statistics.every:
            return None
        observers.require_structured(config, "statistics")
        return cls(config.statistics, config.flow.viscosity)

    # -- sampling ----------------------------------------------------------------------------

    def start(self, run) -> None:
        if self.moments is None and not self.cells:
            if self.profiles:
                self.moments = Moments.empty(len(VARIABLES), run.solver.grid.shape[1])
            else:
                shape = (len(VARIABLES), *run.solver.piece_layout().shape)
                self.cells = {"mean": np.zeros(shape), "m2": np.zeros(shape)}

    def observe(self, run) -> None:
        solver = run.solver
        if solver.steps < self.start_step or solver.time < self.start_time:
            return
        values = np.stack([solver.cell_field(name) for name in VARIABLES])
        if self.profiles:
            self._sample_planes(solver.decomposition, values)
        else:
            self._sample_cells(values)
        window = self.window
        if window["samples"] == 0:
            window["start_time"], window["start_step"] = solver.time, solver.steps
        window["end_time"], window["end_step"] = solver.time, solver.steps
        window["samples"] += 1
        if self.output_every and solver.steps % self.output_every == 0:
            self._write(run)

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
        if self.window["samples"]:
            self._write(run)

    # -- restart -----------------------------------------------------------------------------

    def checkpoint_state(self, run) -> ObserverState:
        window = np.array(
            [np.nan if value is None else value for value in self.window.values()], float
        )
        if self.profiles:
            return ObserverState(replicated={**self.moments.as_arrays(), "window": window})
        pieces = {f"{key}_{name}": self.cells[key][index] for key in ("mean", "m2")
                  for index, name in enumerate(VARIABLES)}  # fmt: skip
        return ObserverState(replicated={"window": window}, pieces=pieces)

    def restore_state(self, run, state: ObserverState) -> None:
        window = state.replicated["window"]
        for key, value in zip(list(self.window), window, strict=True):
            counted = key.endswith("step") or key == "samples"  # integers, stored as floats
            self.window[key] = None if np.isnan(value) else int(value) if counted else value
        if self.profiles and "count" in state.replicated:
            self.moments = Moments.from_arrays(state.replicated)
        elif not self.profiles and state.pieces:
            self.cells = {
                key: np.stack([state.pieces[f"{key}_{name}"] for name in VARIABLES])
                for key in ("mean", "m2")
            }

    def summary(self) -> dict:
        return {"turbulence_statistics": dict(self.window)}

    # -- output ------------------------------------------------------------------------------

    def _write(self, run) -> None:
        if self.profiles:
            table, summary = self._profiles(run.solver.grid)
            if run.root:
                _write_profiles(run.output / "profiles.csv", table)
                _write_json(run.output / "statistics.json", summary)
                _plot_profiles(run.output / "images" / "profiles.png", table, summary)
            return
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
        for kind, values in (("skewness", moments.skewness()), ("flatness", moments.flatness())):
            for index, name in enumerate(VARIABLES[:3]):
                table[f"{name}_{kind}"] = values[index]
        bulk = float(np.dot(table["U"], grid.volume_weights_y))
        summary = {"bulk_velocity": bulk, "viscosity": nu, **self.window}
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
            })  # fmt: skip
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
        """Mean and rms fields of every cell, as VTK pieces (collective)."""
        from tachyflow.io.vtk_files import VTKFieldWriter

        samples = max(self.window["samples"], 1)
        fields = {f"mean_{name}": self.cells["mean"][i] for i, name in enumerate(VARIABLES)}
        fields.update({f"rms_{name}": np.sqrt(self.cells["m2"][i] / samples)
                       for i, name in enumerate(VARIABLES)})  # fmt: skip
        solver = run.solver
        writer = VTKFieldWriter(run.comm, run.output / "statistics", solver.grid,
                                solver.piece_layout())  # fmt: skip
        writer.write(solver.steps, solver.time, fields)
        if run.root:
            _write_json(run.output / "statistics.json", {"viscosity": self.viscosity,
                                                          **self.window})  # fmt: skip


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


def _plot_profiles(path, table: dict[str, np.ndarray], summary: dict) -> None:
    """U+ against y+ with the law of the wall, rms profiles, the shear stress budget."""
    from tachyflow.io.figures import pyplot, save_figure

    plt = pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    u_tau = summary.get("u_tau", 0.0)
    if u_tau:
        y_plus = table["y_plus"]  # both walls of a channel fall on one curve
        order = np.argsort(y_plus)
        axes[0].semilogx(y_plus[order], table["U_plus"][order], "o", ms=3, label="tachyflow")
        line = np.logspace(np.log10(max(y_plus.min(), 0.1)), np.log10(y_plus.max()), 100)
        axes[0].semilogx(line[line < 12], line[line < 12], "k--", lw=1, label="U+ = y+")
        axes[0].semilogx(line[line > 8], np.log(line[line > 8]) / KAPPA + CONSTANT, "k:",
                         lw=1, label=f"ln(y+)/{KAPPA} + {CONSTANT}")  # fmt: skip
        axes[0].set_xlabel("y+")
        axes[0].set_ylabel("U+")
        axes[0].set_title(f"Re_tau = {summary['Re_tau']:.1f}, {summary['samples']} samples")
        for name in ("u", "v", "w"):
            axes[1].plot(y_plus[order], table[f"{name}_rms"][order] / u_tau, ".", label=name)
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
                         label="total, fully developed")  # fmt: skip
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

"""The fan observer: an axial fan's performance from its rotor's loads and the flow on two
cross-sections about it, in ``forces.csv`` beside every body's loads, ``fan.json`` and
``images/fan.png``.

With the rotor at rest in the frame turning at ``Ω`` about x, its ``N`` blades, the bulk
velocity ``U`` through the annulus of area ``A = π (R² - R_h²)``, flow rate ``Q = U A``,
the fluid's density ρ (``[fan] density``), and the fluid's force and moment on the
computed blades scaled to the whole rotor:

* thrust ``T = -F_x`` (the blades' push on the fluid along x),
* shaft torque ``τ = -M_x`` (what the motor supplies), power ``P = τ Ω``,
* on the planes up- (1) and downstream (2) (``[fan] pressure_planes``): the static
  pressure rise ``Δp = p̄₂ - p̄₁`` (area means), the total-to-static rise
  ``Δp_ts = p̄₂ - p_t1`` and the total-to-total rise ``Δp_tt = p_t2 - p_t1``, the total
  pressures ``p_t = p + ρ |c|² / 2`` mass-averaged in the inertial frame (the swirl
  behind the rotor is lost to a rotor-only fan: ``Δp_ts`` is what it delivers),
* flow coefficient ``φ = U / (Ω R)``, pressure coefficient ``ψ_ts = Δp_ts / (ρ (Ω R)²)``,
* efficiencies ``η_ts = Q Δp_ts / P`` and ``η_tt = Q Δp_tt / P``.

A case with ``[fan] units = "SI"`` has them in N, N·m, W, Pa and m³/s; otherwise they are
in the case's units with ρ = ``density`` (1 by default). ``fan.json`` averages them over
the records from ``[fan] average_from`` (a time; 0, the default: the second half of the
records) and gives the blade-passing frequency ``N Ω / 2π``; the
plot shows their histories with that window shaded and its means, the axes fitted to the
window (a start-up spike beyond them is said so).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np

from tachyflow.io.files import replacing
from tachyflow.observers import ObserverState, register
from tachyflow.observers.bodies import BodyLoads
from tachyflow.solvers.base import IMMERSED_BODIES, ROTOR

PERFORMANCE = (
    "thrust", "torque", "power", "flow_rate", "pressure_rise", "total_to_static",
    "total_to_total", "flow_coefficient", "pressure_coefficient", "efficiency_ts",
    "efficiency_tt",
)
# The quantities' units in a case with [fan] units = "SI" (the rest are ratios).
SI_UNITS = {"thrust": "N", "torque": "N·m", "power": "W", "flow_rate": "m³/s",
            "pressure_rise": "Pa", "total_to_static": "Pa", "total_to_total": "Pa"}


def window_range(values: np.ndarray, first: int, margin: float = 0.5) -> tuple[float, float]:
    """The y-axis range of a load history: that of ``values[first:]`` (the averaging
    window) widened by ``margin`` of its span on each side, so that a start-up spike
    does not squash what is averaged (a constant window gets a span of its own size)."""
    window = np.asarray(values, dtype=np.float64)[first:]
    window = window[np.isfinite(window)]
    if window.size == 0:
        return -1.0, 1.0
    low, high = float(window.min()), float(window.max())
    span = high - low or max(abs(high), 1e-12)
    return low - margin * span, high + margin * span


def averaging_start(times, average_from: float) -> int:
    """The first of the records at ``times`` that ``fan.json`` averages: the first at or
    after ``average_from`` when it is positive and some record lies there, else the first
    of the second half."""
    if average_from > 0:
        first = next((index for index, time in enumerate(times) if time >= average_from),
                     len(times))
        if first < len(times):
            return first
    return len(times) // 2


@register
class FanPerformance(BodyLoads):
    """The ``bodies`` observer of a case whose solver has a rotor, with the fan's thrust,
    torque, power, pressure rise and coefficients in the same rows of ``forces.csv``."""

    name = "fan"
    needs = frozenset({IMMERSED_BODIES, ROTOR})
    extra_columns = PERFORMANCE

    def __init__(self, config):
        super().__init__(config)
        self.average_from = config.fan.average_from
        self.rotor = None  # the solver's Rotor, from start()
        self._history: list[dict] = []
        self.performance = None

    @classmethod
    def from_case(cls, config, options):
        return cls(config) if cls.applies(config) else None

    def start(self, run) -> None:
        super().start(run)
        self.rotor = run.solver.rotor()

    def extra_values(self, run, loads: np.ndarray) -> dict:
        solver, rotor = run.solver, self.rotor
        density = rotor.density
        load = loads[rotor.body] * rotor.sectors  # the computed sector is 1 / sectors of it
        sections = solver.section_flow(rotor.pressure_planes)
        static, total = sections["pressure"] * density, sections["total_pressure"] * density
        omega = rotor.rotation
        thrust = -load[0] * density
        torque = -load[3] * math.copysign(1.0, omega or 1.0) * density
        power = torque * abs(omega)
        tip = abs(omega) * rotor.radius or math.nan
        flow_rate = rotor.inflow_velocity * math.pi * (rotor.radius**2 - rotor.hub_radius**2)
        total_to_static, total_to_total = static[1] - total[0], total[1] - total[0]
        values = {
            "thrust": thrust,
            "torque": torque,
            "power": power,
            "flow_rate": flow_rate,
            "pressure_rise": static[1] - static[0],
            "total_to_static": total_to_static,
            "total_to_total": total_to_total,
            "flow_coefficient": rotor.inflow_velocity / tip,
            "pressure_coefficient": total_to_static / (density * tip**2),
            "efficiency_ts": flow_rate * total_to_static / power if power else math.nan,
            "efficiency_tt": flow_rate * total_to_total / power if power else math.nan,
        }
        self._history.append({"time": solver.time, **values})
        run.monitored.update(dp_ts=total_to_static, torque=torque, power=power)
        return values

    def checkpoint_state(self, run) -> ObserverState:
        """The performance records so far (equal on every rank), with the loads' own
        state: a restarted run averages over its whole record (and one restarted from its
        last checkpoint, with no step to take, still writes fan.json)."""
        state = super().checkpoint_state(run) or ObserverState()
        record = [[row["time"], *(row[key] for key in PERFORMANCE)] for row in self._history]
        state.replicated["performance"] = np.array(record, dtype=np.float64).reshape(
            -1, 1 + len(PERFORMANCE))
        return state

    def restore_state(self, run, state: ObserverState) -> None:
        super().restore_state(run, state)
        record = state.replicated.get("performance", np.empty((0, 1 + len(PERFORMANCE))))
        if record.shape[1] != 1 + len(PERFORMANCE):
            # A checkpoint of an earlier version (other quantities): its record is dropped.
            if run.root:
                warnings.warn(f"fan: the checkpoint's performance record has {record.shape[1]}"
                              f" columns, not {1 + len(PERFORMANCE)} (an earlier version's): "
                              "fan.json averages only the steps from here on", stacklevel=2)
            record = record[:0, :0]
        self._history = [dict(zip(("time", *PERFORMANCE), map(float, row), strict=True))
                         for row in record]

    def finish(self, run) -> None:
        super().finish(run)
        if not run.root or not self._history:
            return
        rows = self._history[self._window_start():]
        summary = {key: float(np.mean([row[key] for row in rows])) for key in PERFORMANCE}
        blades, omega = self.rotor.blades, self.rotor.rotation
        summary.update(
            units=self.rotor.units,  # "SI": SI_UNITS's, the rest ratios
            density=self.rotor.density,
            blades=blades,
            rotation=omega,
            blade_passing_frequency=blades * abs(omega) / (2 * math.pi),
            averaged_from_time=rows[0]["time"],
            averaged_to_time=rows[-1]["time"],
            records=len(rows),
        )
        with replacing(run.output / "fan.json") as path:
            path.write_text(json.dumps(summary, indent=2) + "\n")
        self.performance = summary
        self._plot_performance(run)

    def _window_start(self) -> int:
        return averaging_start([row["time"] for row in self._history], self.average_from)

    def _plot_performance(self, run) -> None:
        from tachyflow.io.figures import new_subplots, save_figure

        if len(self._history) < 4:
            return
        time = np.array([row["time"] for row in self._history])
        first = self._window_start()
        figure, axes = new_subplots(3, 1, figsize=(8, 8), sharex=True)
        si = self.rotor.units == "SI"
        for axis, key, label in zip(
            axes,
            ("total_to_static", "torque", "power"),
            ("total-to-static pressure rise", "shaft torque", "shaft power"),
            strict=True,
        ):
            values = np.array([row[key] for row in self._history])
            axis.plot(time, values)
            axis.axvspan(time[first], time[-1], color="C1", alpha=0.12,
                         label="averaged (fan.json)")
            axis.axhline(self.performance[key], color="C1", ls="--", lw=1,
                         label=f"mean {self.performance[key]:.4g}")
            low, high = window_range(values, first)
            axis.set_ylim(low, high)
            if values.min() < low or values.max() > high:
                axis.set_title("the start-up beyond the axis", fontsize=8, loc="right")
            axis.set_ylabel(f"{label} ({SI_UNITS[key]})" if si else label)
            axis.grid(alpha=0.3)
            axis.legend(fontsize=7, loc="upper right")
        axes[-1].set_xlabel("time (s)" if si else "time")
        rotor = self.rotor
        speed = (f"{abs(rotor.rotation) * 30 / math.pi:.0f} rpm" if si
                 else f"Ω = {rotor.rotation:g}")
        passing = self.performance["blade_passing_frequency"]
        figure.suptitle(f"{rotor.blades} blades at {speed}, blade-passing frequency "
                        f"{passing:.4g}{' Hz' if si else ''}")
        (run.output / "images").mkdir(exist_ok=True)
        save_figure(figure, run.output / "images" / "fan.png")

    def summary(self) -> dict | None:
        return {"fan": self.performance, **(super().summary() or {})}

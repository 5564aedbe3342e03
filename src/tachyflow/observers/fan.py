"""The fan observer: an axial fan's performance from its rotor's loads and the pressure
rise across it, in ``forces.csv`` beside every body's loads, ``fan.json`` and
``images/fan.png``.

With the rotor at rest in the frame turning at ``Ω`` about x, its ``N`` blades, the bulk
velocity ``U`` through the annulus of area ``A = π (R² - R_h²)``, flow rate ``Q = U A``,
and the fluid's force and moment on the computed blades scaled to the whole rotor:

* thrust ``T = -F_x`` (the blades' push on the fluid along x),
* shaft torque ``τ = -M_x`` (what the motor supplies), power ``P = τ Ω``,
* static pressure rise ``Δp``: the area-averaged pressure on the plane downstream minus
  that upstream (``[fan] pressure_planes``),
* flow coefficient ``φ = U / (Ω R)``, pressure coefficient ``ψ = Δp / (ρ (Ω R)²)``,
  efficiency ``η = Q Δp / P`` (static), with ρ = 1.

``fan.json`` averages them over the second half of the records (and gives the
blade-passing frequency ``N Ω / 2π``); the plot shows their histories with that window
shaded and its means, the axes fitted to the window (a start-up spike beyond them is
said so).
"""

from __future__ import annotations

import json
import math

import numpy as np

from tachyflow.io.files import replacing
from tachyflow.observers import ObserverState, register
from tachyflow.observers.bodies import BodyLoads
from tachyflow.solvers.base import IMMERSED_BODIES, ROTOR

PERFORMANCE = (
    "thrust", "torque", "power", "pressure_rise", "flow_coefficient",
    "pressure_coefficient", "efficiency",
)


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


@register
class FanPerformance(BodyLoads):
    """The ``bodies`` observer of a case whose solver has a rotor, with the fan's thrust,
    torque, power, pressure rise and coefficients in the same rows of ``forces.csv``."""

    name = "fan"
    needs = frozenset({IMMERSED_BODIES, ROTOR})
    extra_columns = PERFORMANCE

    def __init__(self, config):
        super().__init__(config)
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
        load = loads[rotor.body] * rotor.sectors  # the computed sector is 1 / sectors of it
        inlet, outlet = solver.section_pressures(rotor.pressure_planes)
        omega = rotor.rotation
        thrust, torque = -load[0], -load[3] * math.copysign(1.0, omega or 1.0)
        power = torque * abs(omega)
        rise = outlet - inlet
        tip = abs(omega) * rotor.radius or math.nan
        flow_rate = rotor.inflow_velocity * math.pi * (rotor.radius**2 - rotor.hub_radius**2)
        values = {
            "thrust": thrust,
            "torque": torque,
            "power": power,
            "pressure_rise": rise,
            "flow_coefficient": rotor.inflow_velocity / tip,
            "pressure_coefficient": rise / tip**2,
            "efficiency": flow_rate * rise / power if power else math.nan,
        }
        self._history.append({"time": solver.time, **values})
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
        self._history = [dict(zip(("time", *PERFORMANCE), map(float, row), strict=True))
                         for row in record]

    def finish(self, run) -> None:
        super().finish(run)
        if not run.root or not self._history:
            return
        rows = self._history[len(self._history) // 2 :]
        summary = {key: float(np.mean([row[key] for row in rows])) for key in PERFORMANCE}
        blades, omega = self.rotor.blades, self.rotor.rotation
        summary.update(
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

    def _plot_performance(self, run) -> None:
        from tachyflow.io.figures import new_subplots, save_figure

        if len(self._history) < 4:
            return
        time = np.array([row["time"] for row in self._history])
        first = len(self._history) // 2  # the averaging window: the second half
        figure, axes = new_subplots(3, 1, figsize=(8, 8), sharex=True)
        for axis, key, label in zip(
            axes,
            ("thrust", "torque", "pressure_rise"),
            ("thrust", "shaft torque", "static pressure rise"),
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
            axis.set_ylabel(label)
            axis.grid(alpha=0.3)
            axis.legend(fontsize=7, loc="upper right")
        axes[-1].set_xlabel("time")
        rotor = self.rotor
        figure.suptitle(f"{rotor.blades} blades at Ω = {rotor.rotation:g} (loads are steady "
                        "in the rotor's frame; its tones are heard in the inertial frame)")
        (run.output / "images").mkdir(exist_ok=True)
        save_figure(figure, run.output / "images" / "fan.png")

    def summary(self) -> dict | None:
        return {"fan": self.performance, **(super().summary() or {})}

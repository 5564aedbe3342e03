"""The FW-H accuracy table of docs/acoustics-verification.md: relative L2 error of p' (max
over the observers) per source, scheme and samples per period, with the measured orders.

Run ``python -m pytest tests/verification/test_fwh_accuracy_table.py -m slow -s``: it
prints the table in Markdown and checks that each source converges at the scheme's order
and meets the issue's 1e-3 at 64 samples per period with the fourth-order scheme.
"""

import numpy as np
import pytest

from tests.unit.test_fwh import (
    C0,
    FIXED_OBSERVERS,
    ISSUE_BOUND,
    SCHEMES,
    SURFACE,
    carried_sphere_case,
    circle_path,
    dipole_field,
    harmonic_errors,
    harmonic_strength,
    harmonic_times,
    moving_monopole_case,
    pulsating_sphere_field,
    retarded_field,
    static,
)
from tests.unit.test_fwh_rotating_force import (
    loading_errors,
    revolution_times,
    rotating_force_case,
)

SAMPLES = (32, 64, 128)
# The permeable cases feed the surface the exact linear field; FW-H also integrates its
# quadratic terms (rho' u, rho u u_n), which the linear reference lacks: a relative
# difference proportional to the amplitude, 7e-6 for the rotating monopole of the fast
# tests. The table's sources are this much weaker, so that the difference (then 7e-8)
# stays below the time-discretisation errors it measures.
QUIET = 1e-2


def quiet(field):
    """``field`` (p', u, emission time) scaled by QUIET."""

    def scaled(x, t):
        pressure, velocity, emission = field(x, t)
        return QUIET * pressure, QUIET * velocity, emission

    return scaled


def quiet_strength(tau):
    return QUIET * harmonic_strength(tau)


CONVECTED_OBSERVERS = np.array([[60.0, 0, 0], [-60.0, 0, 0], [20.0, 30.0, 0], [5.0, -3.0, 4.0]])
ROTATING_OBSERVERS = np.array(
    [[3.0, 0, 0], [0, -8.0, 0], [-20.0, 10.0, 0], [0, 0, 5.0], [10.0, 10.0, 10.0]]
)


def pulsating_sphere(n, scheme):
    case = carried_sphere_case(
        quiet(pulsating_sphere_field), static, harmonic_times(n), FIXED_OBSERVERS, **SURFACE,
        scheme=scheme,
    )
    return max(harmonic_errors(*case, n))


def dipole(n, scheme):
    case = carried_sphere_case(
        quiet(dipole_field), static, harmonic_times(n), FIXED_OBSERVERS, **SURFACE, scheme=scheme
    )
    return max(harmonic_errors(*case, n))


def convected_monopole(n, scheme):
    case = moving_monopole_case(
        0.3 * C0, CONVECTED_OBSERVERS, 8, 16, quiet_strength, harmonic_times(n), "gauss",
        scheme,
    )
    return max(harmonic_errors(*case, n))


def rotating_monopole(n, scheme):
    path = circle_path(1.0, 0.5 * C0)

    def field(x, t):
        return retarded_field(x, t, path, quiet_strength)

    case = carried_sphere_case(
        field, path, harmonic_times(n), ROTATING_OBSERVERS, 0.25, 8, 16, "gauss", scheme
    )
    return max(harmonic_errors(*case, n))


def rotating_point_force(n, scheme):
    return max(loading_errors(rotating_force_case(harmonic_times(n), scheme, False), 3 * n))


def steady_rotating_force(n, scheme):
    return max(loading_errors(rotating_force_case(revolution_times(n), scheme, True), n))


SOURCES = {
    "pulsating sphere (permeable sphere at rest)": pulsating_sphere,
    "harmonic dipole (permeable sphere at rest)": dipole,
    "monopole convected at Mach 0.3 (carried permeable sphere)": convected_monopole,
    "monopole on a circle, tip Mach 0.5 (carried permeable sphere)": rotating_monopole,
    "point force on a circle, tip Mach 0.5 (rotating impermeable sphere)": rotating_point_force,
    "steady rotating point force, Gutin's problem (per revolution)": steady_rotating_force,
}


@pytest.mark.slow
def test_fwh_accuracy_table():
    table = {
        (name, order): [source(n, SCHEMES[order]) for n in SAMPLES]
        for name, source in SOURCES.items()
        for order in (2, 4)
    }
    header = " | ".join(f"{n} samples" for n in SAMPLES)
    lines = [
        f"| source | order | {header} | order 32→64 | order 64→128 |",
        "|---|---|" + "---|" * (len(SAMPLES) + 2),
    ]
    for (name, order), errors in table.items():
        rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
        cells = " | ".join(f"{error:.2e}" for error in errors)
        lines.append(f"| {name} | {order} | {cells} | {rates[0]:.2f} | {rates[1]:.2f} |")
    print("\n" + "\n".join(lines))
    for (name, order), errors in table.items():
        rate = np.log2(errors[0] / errors[1])
        assert rate > order - 0.5, (name, order, errors)
        if order == 4:
            assert errors[1] <= ISSUE_BOUND, (name, errors)
    # The second order is about 500 times less accurate at 64 samples per period.
    assert all(
        table[name, 2][1] > 100 * table[name, 4][1] for name in SOURCES if "Gutin" not in name
    )

"""Isentropic vortex advected across a periodic, curved grid by the compressible solver's
kernels (MUSCL + Roe or AUSM+-up, SSP-RK3): the density error falls at second order."""

import itertools

import numpy as np
import pytest

from tachyflow.numerics.compressible.gas import FreeStream, conservative, primitive
from tachyflow.numerics.compressible.metrics import BlockMetrics
from tachyflow.numerics.compressible.residual import FlowDiscretisation
from tachyflow.numerics.compressible.time_integration import ssp_rk3_step

G = 2
LENGTH = 10.0
STRENGTH = 5.0  # Shu's vortex: rho_inf = p_inf = 1, velocity (1, 1)
GAMMA = 1.4


def vortex(x, y, t):
    """Primitive variables of the vortex centred at (5, 5) + t (1, 1), periodic images
    ignored (they are below 1e-5 at the box edge)."""
    cx = (LENGTH / 2 + t) % LENGTH
    cy = (LENGTH / 2 + t) % LENGTH
    dx = (x - cx + LENGTH / 2) % LENGTH - LENGTH / 2
    dy = (y - cy + LENGTH / 2) % LENGTH - LENGTH / 2
    r2 = dx**2 + dy**2
    du = STRENGTH / (2 * np.pi) * np.exp(0.5 * (1 - r2))
    temperature = 1 - (GAMMA - 1) * STRENGTH**2 / (8 * GAMMA * np.pi**2) * np.exp(1 - r2)
    rho = temperature ** (1 / (GAMMA - 1))
    return np.array([rho, 1 - du * dy, 1 + du * dx, rho**GAMMA])


def periodic_grid(n):
    """A periodic, curved grid over the box, with its ghost nodes."""
    s = np.arange(-G, n + G + 1) * LENGTH / n
    X, Y = np.meshgrid(s, s, indexing="ij")
    wave = 2 * np.pi / LENGTH
    x = X + 0.3 * np.sin(wave * Y)
    y = Y + 0.3 * np.sin(wave * X)
    return x, y


def periodic_fill(U):
    U[:, :G], U[:, -G:] = U[:, -2 * G : -G], U[:, G : 2 * G]
    U[:, :, :G], U[:, :, -G:] = U[:, :, -2 * G : -G], U[:, :, G : 2 * G]


def density_error(n, scheme, limiter, final_time=1.0, cfl=0.5):
    metrics = BlockMetrics.from_nodes(*periodic_grid(n), G)
    # The speed of sound of rho = p = 1 is sqrt(1.4); conditions only set the AUSM cut-off.
    disc = FlowDiscretisation(metrics, FreeStream(mach=1.0), scheme, limiter)
    U = conservative(vortex(metrics.xc, metrics.yc, 0.0))
    periodic_fill(U)
    h = LENGTH / n
    steps = int(np.ceil(final_time / (cfl * h / (np.sqrt(2) + np.sqrt(GAMMA)))))
    dt = final_time / steps
    for _ in range(steps):
        U, _ = ssp_rk3_step(U, dt, disc, periodic_fill)
    owned = metrics.owned
    error = primitive(U)[0][owned] - vortex(metrics.xc, metrics.yc, final_time)[0][owned]
    area = metrics.area[owned]
    return float(np.sqrt(np.sum(area * error**2) / np.sum(area)))


def observed_orders(scheme, limiter, sizes):
    errors = [density_error(n, scheme, limiter) for n in sizes]
    return errors, [np.log2(a / b) for a, b in itertools.pairwise(errors)]


@pytest.mark.parametrize(("scheme", "limiter"), [("roe", "van-albada"), ("ausm+up", "none")])
def test_vortex_error_falls_at_second_order(scheme, limiter):
    errors, orders = observed_orders(scheme, limiter, (20, 40, 80))
    assert orders[-1] > 1.8, (errors, orders)
    assert errors[-1] < 2e-3, errors


def main():  # python tests/verification/test_compressible_vortex.py: the table of docs
    for scheme, limiter in [("roe", "van-albada"), ("roe", "none"), ("ausm+up", "none"),
                            ("ausm+up", "van-albada"), ("roe", "minmod")]:
        errors, orders = observed_orders(scheme, limiter, (20, 40, 80))
        print(scheme, limiter, " ".join(f"{e:.3e}" for e in errors),
              " ".join(f"{o:.2f}" for o in orders))


if __name__ == "__main__":
    main()

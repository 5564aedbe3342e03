"""Initial conditions of the Cartesian solver, from ``[flow] initial`` of a case (the
choices are :data:`~tachyflow.solvers.pencil.options.CARTESIAN_INITIAL`).

Every one is an analytic function of the coordinates (the random phases of
``perturbed-channel`` come from ``[flow] seed``), or, for ``isotropic``, drawn mode by
mode in Fourier space from random numbers of each mode
(:class:`~tachyflow.solvers.pencil.spectrum.BoxSpectrum`), so the state does not depend
on the number of ranks.
"""

from __future__ import annotations

import numpy as np


def set_initial_condition(config, solver) -> None:
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
    elif flow.initial == "isotropic":
        from tachyflow.solvers.pencil.spectrum import BoxSpectrum, reference_spectra

        wavenumbers, energies = reference_spectra(config)
        first = energies[config.isotropic.stations[0]]
        measured = np.isfinite(first)
        box = BoxSpectrum(solver.decomposition, config.grid.lengths)
        spacings = (solver.dx, solver.grid.widths_y[0], solver.dz)
        solver.set_velocity(*box.random_velocity(wavenumbers[measured], first[measured],
                                                 config.isotropic.seed, spacings))
        solver.project()
    elif flow.initial == "poiseuille":
        solver.set_velocity(laminar, 0.0, 0.0)
    elif flow.initial == "taylor-green":
        solver.set_velocity(
            lambda x, y, z: np.sin(x) * np.cos(y) * np.cos(z),
            lambda x, y, z: -np.cos(x) * np.sin(y) * np.cos(z),
            0.0,
        )
    elif flow.initial in ("perturbed-channel", "inflow"):
        # The laminar profile plus random-phase waves and streaks; "inflow" on an open x
        # has no bulk: the waves alone, their amplitude [flow] perturbation (the first
        # projection adds the inflow's potential flow).
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

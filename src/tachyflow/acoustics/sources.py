"""FW-H source terms of a permeable surface from the flow, the physics the noise-source
exchange carries out where the values are (MPI-free).

:class:`PermeableSourceTerms` turns trilinear stencils of u, v, w, p around surface points
into the four source terms ``[U_n, L_x, L_y, L_z]`` of Farassat's formulation 1A (with
``ρ = ρ0``, incompressible flow), from values that arrived in a message, or read straight
from this rank's ghosted fields (the "source-put" exchange, Type C of Kwon, Park & Choi,
which sends 4 terms instead of 32 values); :class:`SurfacePressureTerms` reads only the
pressure, for a solid surface whose motion the integrating rank adds;
:class:`~tachyflow.parallel.NoiseSourceExchange`
calls it; the exchange itself only moves data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.interpolation import gathered_source_terms, stencil_source_terms


def _finite(name: str, value, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or (positive and value <= 0):
        kind = "positive finite" if positive else "finite"
        raise ValueError(f"{name} must be a {kind} number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class PermeableSourceTerms:
    """The FW-H source terms of a permeable surface in a medium of density ``rho0`` and
    pressure ``p0`` at rest (checked: ``rho0`` positive, both finite)."""

    rho0: float = 1.0
    p0: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "rho0", _finite("rho0", self.rho0, positive=True))
        object.__setattr__(self, "p0", _finite("p0", self.p0))

    def from_values(self, values, weights, normals) -> np.ndarray:
        """Terms ``(n, 4)`` from stencil values ``(n, 4, 8)`` that arrived in messages."""
        return stencil_source_terms(values, weights, normals, self.rho0, self.p0)

    def from_fields(self, fields, flat, weights, normals, out) -> None:
        """Terms into ``out`` from flat ghosted fields at positions ``flat`` (no copies)."""
        gathered_source_terms(fields, flat, weights, normals, self.rho0, self.p0, out)


@dataclass(frozen=True)
class SurfacePressureTerms:
    """The loading of a solid surface, ``[0, (p - p0) n]``, from the pressure stencils only
    (the thickness term and the surface's motion are the integrating rank's: they are
    geometry). ``p0`` finite."""

    p0: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "p0", _finite("p0", self.p0))

    def _terms(self, values, weights, normals) -> np.ndarray:
        pressure = np.einsum("nc,nc->n", values, weights) - self.p0
        terms = np.zeros((len(pressure), 4))
        terms[:, 1:] = pressure[:, None] * normals
        return terms

    def from_values(self, values, weights, normals) -> np.ndarray:
        """Terms ``(n, 4)`` from stencil values ``(n, 4, 8)`` that arrived in messages."""
        return self._terms(values[:, 3], weights[:, 3], normals)

    def from_fields(self, fields, flat, weights, normals, out) -> None:
        """Terms into ``out`` from flat ghosted fields at positions ``flat``."""
        out[...] = self._terms(fields[3][flat[:, 3]], weights[:, 3], normals)

"""Subgrid-scale eddy viscosities and the divergence of their stress on the staggered
Cartesian grid (MPI-free, numba).

The velocity is staggered as the solvers keep it: ghosted arrays with ``u[i, j, k]`` on
the face ``i + 1/2`` of cell ``(i, j, k)``, ``v`` on ``j + 1/2``, ``w`` on ``k + 1/2``, one
ghost layer with corners. The gradient ``g_ab = ∂u_a/∂x_b`` is taken at the owned cell
centres: the diagonal from the two faces of the cell, the rest by centred differences of
the velocity averaged to the neighbouring centres (``gap_down + gap`` apart in y). The
filter width is the cell's: ``Δ = (Δx Δy Δz)^(1/3)``; Vreman's model takes the three
widths themselves.

Models (``MODELS``; ν_t at the cell centres):

* ``smagorinsky``: ``ν_t = (C_s Δ D)² |S|``, ``|S| = (2 S_ij S_ij)^(1/2)``, with van
  Driest's damping ``D = 1 - exp(-y⁺/A⁺)`` near walls (``A⁺ = 26``; Smagorinsky 1963,
  van Driest 1956); ``C_s = 0.1``, the value of channel-flow LES (Deardorff 1970).
* ``vreman``: ``ν_t = c (B_β / (α_ij α_ij))^(1/2)``, ``α_ij = ∂u_j/∂x_i``,
  ``β_ij = Σ_m Δ_m² α_mi α_mj``, ``B_β = β11 β22 - β12² + β11 β33 - β13² + β22 β33
  - β23²``; ``c = 2.5 C_s² = 0.07`` with ``C_s = 0.17`` (Vreman, "An eddy-viscosity
  subgrid-scale model for turbulent shear flow: algebraic theory and applications", Phys.
  Fluids 16, 3670, 2004). Zero where ``α_ij α_ij = 0`` and in any flow of one gradient
  direction (pure shear, a laminar channel).
* ``dynamic-global``: Vreman's form with one coefficient for the whole domain,
  ``ν_t = C_v(t) Π_β``, ``Π_β = (B_β / (α_ij α_ij))^(1/2)`` (Park, Lee, Lee & Choi, "A
  dynamic subgrid-scale eddy viscosity model with a global model coefficient", Phys.
  Fluids 18, 125109, 2006), the coefficient from one of two global identities
  (:data:`IDENTITIES`), sums over the whole domain (:func:`global_sums`), ``~`` the test
  filter:

  - ``germano``: Germano's identity contracted with the test-filtered strain and summed,
    ``C_v = −⟨L_ij S̃_ij⟩ / (2 ⟨M_ij S̃_ij⟩)``, ``L_ij = (ū_i ū_j)~ − ũ_i ũ_j``,
    ``M_ij = Π̃_β S̃_ij − (Π_β S_ij)~`` (Π̃_β of the filtered gradient at twice the
    filtered widths);
  - ``equilibrium``: the viscous and the subgrid dissipation summed over the domain are
    the same at the grid and at the test filter's level, ``C_v = −(ν/2) ⟨(α_ij α_ij)~ −
    α̃_ij α̃_ij⟩ / ⟨(Π_β S_ij S_ij)~ − Π̃_β S̃_ij S̃_ij⟩``. Where the resolved gradient
    lives at the grid's last wavenumbers (a field of much energy at the cut-off, as
    decaying isotropic turbulence at 32³), the test filter takes most of it, the
    denominator turns positive and the coefficient is clipped to 0: the Germano form
    does not depend on the gradient's share at the cut-off that way.

  No averaging over homogeneous directions and no clipping cell by cell: one number per
  step (0 where the identity would make it negative), which suits immersed bodies and
  rotating frames. The test filter is Simpson's rule over three cells (width 2Δ) along x,
  z and a periodic y; the filtered gradient is the gradient of the filtered velocity (the
  two commute on the uniform filtered directions).
* ``wale``: ``ν_t = (C_w Δ)² (S^d_ij S^d_ij)^(3/2) / ((S_ij S_ij)^(5/2) + (S^d_ij
  S^d_ij)^(5/4))``, ``S^d_ij = ½ (g²_ij + g²_ji) - ⅓ δ_ij g²_kk``, ``g²_ij = g_ik g_kj``;
  ``C_w = 0.325`` (Nicoud & Ducros, "Subgrid-scale stress modelling based on the square of
  the velocity gradient tensor", Flow Turb. Combust. 62, 183, 1999, the value OpenFOAM
  uses). Zero in pure shear and at walls (as y³).

:func:`add_stress_divergence` adds ``∂_j (2 ν_t S_ij)`` (ν_t ghosted like the velocity)
to each component's explicit terms at its own faces: the normal stresses at the centres,
the shear stresses on the cell edges with ν_t averaged from the four centres around.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.stencils import XMetrics, x_metrics

MODELS = ("smagorinsky", "vreman", "wale")
#: The models' constants: Smagorinsky's C_s, Vreman's c, WALE's C_w.
CONSTANTS = {"smagorinsky": 0.1, "vreman": 0.07, "wale": 0.325}
VAN_DRIEST_A_PLUS = 26.0


@numba.njit(error_model="numpy", inline="always")
def _gradient(u, v, w, i, j, k, dx, along, dz, dy, across, g):  # pragma: no cover
    # g[a, b] = ∂u_a/∂x_b at the centre of cell (i, j, k); across: centre j-1 to j+1;
    # dx: the cell's x width, along: half the distance from centre i-1 to i+1.
    g[0, 0] = (u[i, j, k] - u[i - 1, j, k]) / dx
    g[1, 1] = (v[i, j, k] - v[i, j - 1, k]) / dy
    g[2, 2] = (w[i, j, k] - w[i, j, k - 1]) / dz
    g[0, 1] = 0.5 * (u[i, j + 1, k] + u[i - 1, j + 1, k]
                     - u[i, j - 1, k] - u[i - 1, j - 1, k]) / across
    g[0, 2] = 0.25 * (u[i, j, k + 1] + u[i - 1, j, k + 1]
                      - u[i, j, k - 1] - u[i - 1, j, k - 1]) / dz
    g[1, 0] = 0.25 * (v[i + 1, j, k] + v[i + 1, j - 1, k]
                      - v[i - 1, j, k] - v[i - 1, j - 1, k]) / along
    g[1, 2] = 0.25 * (v[i, j, k + 1] + v[i, j - 1, k + 1]
                      - v[i, j, k - 1] - v[i, j - 1, k - 1]) / dz
    g[2, 0] = 0.25 * (w[i + 1, j, k] + w[i + 1, j, k - 1]
                      - w[i - 1, j, k] - w[i - 1, j, k - 1]) / along
    g[2, 1] = 0.5 * (w[i, j + 1, k] + w[i, j + 1, k - 1]
                     - w[i, j - 1, k] - w[i, j - 1, k - 1]) / across


@numba.njit(error_model="numpy", inline="always")
def _strain_squared(g):  # pragma: no cover
    total = 0.0
    for a in range(3):
        for b in range(3):
            s = 0.5 * (g[a, b] + g[b, a])
            total += s * s
    return total


@numba.njit(error_model="numpy")
def smagorinsky_value(g, delta, constant, damping):  # pragma: no cover
    """Smagorinsky's ν_t of the gradient ``g`` (compiled; one point)."""
    length = constant * delta * damping
    return length * length * math.sqrt(2.0 * _strain_squared(g))


@numba.njit(error_model="numpy")
def vreman_value(g, widths, constant, beta):  # pragma: no cover
    """Vreman's ν_t of the gradient ``g`` (``beta``: a 3 x 3 work array; compiled)."""
    # alpha[a, b] = ∂u_b/∂x_a = g[b, a]; beta[a, b] = Σ_m Δ_m² alpha[m, a] alpha[m, b].
    alpha_squared = 0.0
    for a in range(3):
        for b in range(3):
            alpha_squared += g[a, b] * g[a, b]
    if alpha_squared <= 0.0:
        return 0.0
    for a in range(3):
        for b in range(3):
            total = 0.0
            for m in range(3):
                total += widths[m] * widths[m] * g[a, m] * g[b, m]
            beta[a, b] = total
    b_beta = (beta[0, 0] * beta[1, 1] - beta[0, 1] ** 2 + beta[0, 0] * beta[2, 2]
              - beta[0, 2] ** 2 + beta[1, 1] * beta[2, 2] - beta[1, 2] ** 2)
    if b_beta <= 0.0:
        return 0.0
    return constant * math.sqrt(b_beta / alpha_squared)


@numba.njit(error_model="numpy")
def wale_value(g, delta, constant, square):  # pragma: no cover
    """WALE's ν_t of the gradient ``g`` (``square``: a 3 x 3 work array; compiled)."""
    for a in range(3):
        for b in range(3):
            total = 0.0
            for m in range(3):
                total += g[a, m] * g[m, b]
            square[a, b] = total
    third = (square[0, 0] + square[1, 1] + square[2, 2]) / 3.0
    deviatoric = 0.0
    for a in range(3):
        for b in range(3):
            d = 0.5 * (square[a, b] + square[b, a]) - (third if a == b else 0.0)
            deviatoric += d * d
    denominator = _strain_squared(g) ** 2.5 + deviatoric**1.25
    if denominator <= 0.0:
        return 0.0
    length = constant * delta
    return length * length * deviatoric**1.5 / denominator


@numba.njit(error_model="numpy", inline="always")
def model_value(model, g, widths, delta, constant, damping, work):  # pragma: no cover
    """ν_t of ``model`` (the index in :data:`MODELS`) of the gradient ``g`` in a cell of
    ``widths`` and filter width ``delta`` (compiled; ``work``: a 3 x 3 work array)."""
    if model == 0:
        return smagorinsky_value(g, delta, constant, damping)
    if model == 1:
        return vreman_value(g, widths, constant, work)
    return wale_value(g, delta, constant, work)


@kernel(error_model="numpy", parallel=True)
def _eddy_viscosity(
    u, v, w, width_x, gap_x, dz, width, gap, gap_down, model, constant, damping, out
):  # pragma: no cover
    nx, ny, nz = out.shape
    for i in prange(1, nx + 1):
        g, work, widths = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
        dx, along = width_x[i], 0.5 * (gap_x[i - 1] + gap_x[i])
        for j in range(1, ny + 1):
            dy = width[j - 1]
            across = gap[j - 1] + gap_down[j - 1]
            delta = (dx * dy * dz) ** (1.0 / 3.0)
            widths[0], widths[1], widths[2] = dx, dy, dz
            for k in range(1, nz + 1):
                _gradient(u, v, w, i, j, k, dx, along, dz, dy, across, g)
                out[i - 1, j - 1, k - 1] = model_value(
                    model, g, widths, delta, constant, damping[j - 1], work)


#: The test filter of the dynamic global coefficient: Simpson's rule over three cells
#: along each filtered direction (the filter of the Choi group's code), width 2Δ.
TEST_FILTER = np.array([1.0, 4.0, 1.0]) / 6.0
#: The identities the dynamic global coefficient may come from (see the module).
IDENTITIES = ("germano", "equilibrium")
#: The arrays of :func:`vreman_parts` at each centre: the 9 gradient components g_ab
#: (``3 a + b``), the 3 velocity components, their 6 products and the 6 of Π_β S_ij
#: (pairs in :data:`PAIRS` order), α_ij α_ij and Π_β S_ij S_ij.
PARTS = 26
VELOCITY, PRODUCTS, MODEL_STRAINS, SQUARED, DISSIPATION = 9, 12, 18, 24, 25
PAIRS = np.array([[0, 0], [1, 1], [2, 2], [0, 1], [0, 2], [1, 2]])


@numba.njit(error_model="numpy", inline="always")
def store_parts(g, velocity, widths, work, parts, i, j, k):  # pragma: no cover
    """The :data:`PARTS` of the gradient ``g`` and the ``velocity`` at a centre into
    ``parts[:, i, j, k]`` (compiled)."""
    squared = 0.0
    for a in range(3):
        for b in range(3):
            parts[3 * a + b, i, j, k] = g[a, b]
            squared += g[a, b] * g[a, b]
    vreman = vreman_value(g, widths, 1.0, work)
    for a in range(3):
        parts[VELOCITY + a, i, j, k] = velocity[a]
    for p in range(6):
        a, b = PAIRS[p, 0], PAIRS[p, 1]
        parts[PRODUCTS + p, i, j, k] = velocity[a] * velocity[b]
        parts[MODEL_STRAINS + p, i, j, k] = vreman * 0.5 * (g[a, b] + g[b, a])
    parts[SQUARED, i, j, k] = squared
    parts[DISSIPATION, i, j, k] = vreman * _strain_squared(g)


@kernel(error_model="numpy", parallel=True)
def _vreman_parts(u, v, w, width_x, gap_x, dz, width, gap, gap_down, parts):  # pragma: no cover
    nx, ny, nz = parts.shape[1] - 2, parts.shape[2] - 2, parts.shape[3] - 2
    for i in prange(1, nx + 1):
        g, work, widths = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
        velocity = np.empty(3)
        dx, along = width_x[i], 0.5 * (gap_x[i - 1] + gap_x[i])
        for j in range(1, ny + 1):
            dy = width[j - 1]
            across = gap[j - 1] + gap_down[j - 1]
            widths[0], widths[1], widths[2] = dx, dy, dz
            for k in range(1, nz + 1):
                _gradient(u, v, w, i, j, k, dx, along, dz, dy, across, g)
                velocity[0] = 0.5 * (u[i, j, k] + u[i - 1, j, k])
                velocity[1] = 0.5 * (v[i, j, k] + v[i, j - 1, k])
                velocity[2] = 0.5 * (w[i, j, k] + w[i, j, k - 1])
                store_parts(g, velocity, widths, work, parts, i, j, k)


def vreman_parts(u, v, w, metrics, dx, dz: float, parts: np.ndarray) -> None:
    """Into the owned cells of ``parts`` (:data:`PARTS` ghosted arrays) what the dynamic
    coefficient filters at each cell centre (:data:`PARTS`; Π_β: Vreman's ν_t with c =
    1); ``dx`` a uniform spacing or the
    :class:`~tachyflow.numerics.stencils.XMetrics` of the x range."""
    x = x_metrics(dx, u)
    _vreman_parts(u, v, w, x.width, x.gap, float(dz), metrics.width.ravel(),
                  metrics.gap.ravel(), metrics.gap_down.ravel(), parts)


@kernel(error_model="numpy", parallel=True)
def _global_sums(
    parts, widths_of_rows, weights, x_factors, filters, scale, fluid, sums
):  # pragma: no cover
    nx, ny, nz = parts.shape[1] - 2, parts.shape[2] - 2, parts.shape[3] - 2
    masked = fluid.shape[0] > 0
    totals = np.zeros((nx, 4))
    for i in prange(1, nx + 1):
        # The filter is separable: each part's rows filtered along z first (for the x and
        # y neighbours the filter takes), then combined: a few passes over contiguous rows
        # instead of 27 scattered reads per part and cell.
        along_z = np.zeros((PARTS, 3, 3, nz))
        filtered = np.empty((PARTS, nz))
        widths, cell = np.empty(3), np.empty(PARTS)
        g, work, strain = np.empty((3, 3)), np.empty((3, 3)), np.empty(6)
        row_totals = np.zeros(4)
        for j in range(1, ny + 1):
            for c in range(PARTS):
                for a in range(3):
                    if filters[0, a] == 0.0:
                        continue
                    for b in range(3):
                        if filters[1, b] == 0.0:
                            continue
                        line = parts[c, i + a - 1, j + b - 1]
                        for k in range(nz):
                            along_z[c, a, b, k] = (filters[2, 0] * line[k]
                                                   + filters[2, 1] * line[k + 1]
                                                   + filters[2, 2] * line[k + 2])
                for k in range(nz):
                    total = 0.0
                    for a in range(3):
                        for b in range(3):
                            total += filters[0, a] * filters[1, b] * along_z[c, a, b, k]
                    filtered[c, k] = total
            for m in range(3):
                widths[m] = scale[m] * widths_of_rows[j - 1, m]
            widths[0] *= x_factors[i - 1]  # (1 on a uniform x: its width is the row's)
            weight = weights[j - 1] * x_factors[i - 1]
            for k in range(nz):
                if masked and not fluid[i - 1, j - 1, k]:
                    continue
                for c in range(PARTS):
                    cell[c] = filtered[c, k]
                _add_cell_sums(cell, widths, weight, g, work, strain, row_totals)
        for n in range(4):
            totals[i - 1, n] = row_totals[n]
    for n in range(4):
        sums[n] = totals[:, n].sum()


@numba.njit(error_model="numpy", inline="always")
def _add_cell_sums(filtered, widths, weight, g, work, strain, totals):  # pragma: no cover
    # One cell's shares of the four global sums from its filtered parts.
    for a in range(3):
        for b in range(3):
            g[a, b] = filtered[3 * a + b]
    resolved = 0.0
    for a in range(3):
        for b in range(3):
            resolved += g[a, b] * g[a, b]
    vreman = vreman_value(g, widths, 1.0, work)
    leonard, model = 0.0, 0.0
    for p in range(6):
        a, b = PAIRS[p, 0], PAIRS[p, 1]
        strain[p] = 0.5 * (g[a, b] + g[b, a])
        twice = 1.0 if a == b else 2.0  # the symmetric pair's other half
        leonard += twice * strain[p] * (
            filtered[PRODUCTS + p] - filtered[VELOCITY + a] * filtered[VELOCITY + b])
        model += twice * strain[p] * (vreman * strain[p] - filtered[MODEL_STRAINS + p])
    totals[0] += weight * leonard
    totals[1] += weight * model
    totals[2] += weight * (filtered[SQUARED] - resolved)
    totals[3] += weight * (filtered[DISSIPATION] - vreman * _strain_squared(g))


def row_global_sums(parts: np.ndarray, widths: np.ndarray, weights: np.ndarray, filtered,
                    fluid=None, x_factors: np.ndarray | None = None) -> np.ndarray:
    """This rank's shares of the two identities' volume sums: ``⟨L_ij S̃_ij⟩`` and
    ``⟨M_ij S̃_ij⟩`` (Germano's), ``⟨(α_ij α_ij)~ − α̃_ij α̃_ij⟩`` and ``⟨(Π_β S_ij S_ij)~ −
    Π̃_β S̃_ij S̃_ij⟩`` (the equilibrium's), ``~`` the test filter along the ``filtered``
    axes (three bools) with width 2Δ there; ``parts`` ghosted (:data:`PARTS` arrays,
    ghosts filled); ``widths`` the cells' three widths per owned row (shape ``(ny, 3)``),
    ``weights`` the cells' volumes per row (up to a common factor); ``fluid`` (owned
    cells, bool) where the cells count, if given; ``x_factors`` (one per owned x cell,
    default 1) multiply the x width and the volume (a stretched x: the rows' x width 1,
    the factors the cells' widths)."""
    filters = np.array([TEST_FILTER if along else [0.0, 1.0, 0.0] for along in filtered])
    scale = np.array([2.0 if along else 1.0 for along in filtered])
    sums = np.empty(4)
    mask = np.empty((0, 0, 0), dtype=np.bool_) if fluid is None else np.asarray(fluid, bool)
    nx = parts.shape[1] - 2
    x_factors = np.ones(nx) if x_factors is None else np.asarray(x_factors, np.float64)
    if x_factors.shape != (nx,):
        raise ValueError(f"x_factors has shape {x_factors.shape}, expected ({nx},)")
    _global_sums(parts, np.ascontiguousarray(widths, dtype=np.float64),
                 np.ascontiguousarray(weights, dtype=np.float64),
                 np.ascontiguousarray(x_factors), filters, scale, mask, sums)
    return sums


def row_widths_and_x_factors(x, ghosted: np.ndarray, width: np.ndarray, third: np.ndarray):
    """The rows' three widths and the x factors of :func:`row_global_sums` for ``x`` (a
    spacing or :class:`~tachyflow.numerics.stencils.XMetrics` of the ghosted array
    ``ghosted``), ``width`` the rows' second widths and ``third`` their third ones: a
    uniform x in the rows (factors None), a stretched one in the factors."""
    if isinstance(x, XMetrics) and not np.all(x.width == x.width[0]):
        first, factors = np.ones_like(width), x.width[1:-1]
    else:
        first, factors = np.full_like(width, x_metrics(x, ghosted).width[0]), None
    return np.stack([first, width, third], axis=1), factors


def global_sums(parts: np.ndarray, metrics, dx, dz: float, filtered, fluid=None):
    """:func:`row_global_sums` on the Cartesian grid of ``metrics``
    (:func:`vreman_parts`' ``parts``; ``dx`` as there)."""
    width = metrics.width.ravel()
    widths, factors = row_widths_and_x_factors(dx, parts[0], width, np.full_like(width, dz))
    return row_global_sums(parts, widths, width, filtered, fluid, factors)


def dynamic_coefficient(sums, viscosity: float, identity: str = "germano") -> float:
    """Park, Lee, Lee & Choi's global coefficient from the four global sums over all ranks
    (:func:`global_sums`) by ``identity`` (:data:`IDENTITIES`): Germano's, ``C_v = −⟨L_ij
    S̃_ij⟩ / (2 ⟨M_ij S̃_ij⟩)``, or the dissipations' equilibrium, ``C_v = −(ν/2) ⟨(α_ij
    α_ij)~ − α̃_ij α̃_ij⟩ / ⟨(Π_β S_ij S_ij)~ − Π̃_β S̃_ij S̃_ij⟩``; 0 where it would be
    negative or the denominator vanishes."""
    if identity not in IDENTITIES:
        raise ValueError(f"identity must be one of {IDENTITIES}, got {identity!r}")
    leonard, model, squared, dissipation = (float(value) for value in sums)
    numerator, denominator = ((leonard, 2.0 * model) if identity == "germano"
                              else (viscosity * squared, 2.0 * dissipation))
    if denominator == 0.0 or not np.isfinite(denominator):
        return 0.0
    return max(0.0, -numerator / denominator)


def eddy_viscosity(u, v, w, metrics, dx, dz: float, model: str, out: np.ndarray,
                   constant: float | None = None, damping: np.ndarray | None = None):
    """ν_t of ``model`` at the owned cell centres into ``out`` (shape of the owned cells);
    ``constant`` defaults to the model's (:data:`CONSTANTS`), ``damping`` (one factor per
    y row, Smagorinsky's van Driest damping) to none. ``metrics`` is the grid's
    :class:`~tachyflow.numerics.stencils.YMetrics`, ``dx`` a uniform spacing or the
    :class:`~tachyflow.numerics.stencils.XMetrics` of the x range."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    shape = tuple(n - 2 for n in u.shape)
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, expected the owned cells' {shape}")
    damping = np.ones(shape[1]) if damping is None else np.asarray(damping, dtype=np.float64)
    if damping.shape != (shape[1],):
        raise ValueError(f"damping has shape {damping.shape}, expected ({shape[1]},)")
    x = x_metrics(dx, u)
    _eddy_viscosity(
        u, v, w, x.width, x.gap, float(dz), metrics.width.ravel(), metrics.gap.ravel(),
        metrics.gap_down.ravel(), MODELS.index(model),
        CONSTANTS[model] if constant is None else float(constant), damping, out,
    )
    return out


def van_driest(wall_distance: np.ndarray, friction_velocity: float, viscosity: float,
               a_plus: float = VAN_DRIEST_A_PLUS) -> np.ndarray:
    """van Driest's damping ``1 - exp(-y⁺/A⁺)`` at the given distances from the wall."""
    y_plus = np.asarray(wall_distance) * friction_velocity / viscosity
    return 1.0 - np.exp(-y_plus / a_plus)


@numba.njit(error_model="numpy", inline="always")
def _edge(nu, i, j, k, a, b, c, d, e, f):  # pragma: no cover
    # ν on the edge between centres (i, j, k), + (a, b, c), + (d, e, f) and + both.
    return 0.25 * (nu[i, j, k] + nu[i + a, j + b, k + c] + nu[i + d, j + e, k + f]
                   + nu[i + a + d, j + b + e, k + c + f])


@kernel(error_model="numpy", parallel=True)
def _add_stress_divergence(
    u, v, w, nu, width_x, gap_x, dz, width, width_up, gap, gap_down, out_u, out_v, out_w
):  # pragma: no cover
    nx, ny, nz = out_u.shape
    for i in prange(1, nx + 1):
        # The cell's x width, the distances centre to centre up and down (u's control
        # volume, and the x differences on the edges at i ± 1/2), the next cell's width.
        dx, dx_up, dx_down = width_x[i], gap_x[i], gap_x[i - 1]
        ratio = width_x[i] / width_x[i + 1]  # 1 on a uniform x
        for j in range(1, ny + 1):
            dy, dy_up, up, down = width[j - 1], width_up[j - 1], gap[j - 1], gap_down[j - 1]
            for k in range(1, nz + 1):
                # The shear strains (∂u_a/∂x_b + ∂u_b/∂x_a) on the edges each face needs,
                # times ν there: xy at (i+1/2, j±1/2) and (i-1/2, j+1/2), xz at
                # (i+1/2, k±1/2) and (i-1/2, k+1/2), yz at (j+1/2, k±1/2), (j-1/2, k+1/2).
                xy_up = _edge(nu, i, j, k, 1, 0, 0, 0, 1, 0) * (
                    (u[i, j + 1, k] - u[i, j, k]) / up
                    + (v[i + 1, j, k] - v[i, j, k]) / dx_up)
                xy_down = _edge(nu, i, j, k, 1, 0, 0, 0, -1, 0) * (
                    (u[i, j, k] - u[i, j - 1, k]) / down
                    + (v[i + 1, j - 1, k] - v[i, j - 1, k]) / dx_up)
                yx_down = _edge(nu, i, j, k, -1, 0, 0, 0, 1, 0) * (
                    (u[i - 1, j + 1, k] - u[i - 1, j, k]) / up
                    + (v[i, j, k] - v[i - 1, j, k]) / dx_down)
                xz_up = _edge(nu, i, j, k, 1, 0, 0, 0, 0, 1) * (
                    (u[i, j, k + 1] - u[i, j, k]) / dz + (w[i + 1, j, k] - w[i, j, k]) / dx_up)
                xz_down = _edge(nu, i, j, k, 1, 0, 0, 0, 0, -1) * (
                    (u[i, j, k] - u[i, j, k - 1]) / dz
                    + (w[i + 1, j, k - 1] - w[i, j, k - 1]) / dx_up)
                zx_down = _edge(nu, i, j, k, -1, 0, 0, 0, 0, 1) * (
                    (u[i - 1, j, k + 1] - u[i - 1, j, k]) / dz
                    + (w[i, j, k] - w[i - 1, j, k]) / dx_down)
                yz_up = _edge(nu, i, j, k, 0, 1, 0, 0, 0, 1) * (
                    (v[i, j, k + 1] - v[i, j, k]) / dz + (w[i, j + 1, k] - w[i, j, k]) / up)
                yz_down = _edge(nu, i, j, k, 0, 1, 0, 0, 0, -1) * (
                    (v[i, j, k] - v[i, j, k - 1]) / dz
                    + (w[i, j + 1, k - 1] - w[i, j, k - 1]) / up)
                zy_down = _edge(nu, i, j, k, 0, -1, 0, 0, 0, 1) * (
                    (v[i, j - 1, k + 1] - v[i, j - 1, k]) / dz
                    + (w[i, j, k] - w[i, j - 1, k]) / down)
                # Twice ν times the normal strains at the two centres beside each face.
                xx = 2.0 * (nu[i + 1, j, k] * (u[i + 1, j, k] - u[i, j, k]) * ratio
                            - nu[i, j, k] * (u[i, j, k] - u[i - 1, j, k])) / (dx * dx_up)
                yy = 2.0 * (nu[i, j + 1, k] * (v[i, j + 1, k] - v[i, j, k]) / dy_up
                            - nu[i, j, k] * (v[i, j, k] - v[i, j - 1, k]) / dy) / up
                zz = 2.0 * (nu[i, j, k + 1] * (w[i, j, k + 1] - w[i, j, k])
                            - nu[i, j, k] * (w[i, j, k] - w[i, j, k - 1])) / (dz * dz)
                out_u[i - 1, j - 1, k - 1] += xx + (xy_up - xy_down) / dy + (xz_up - xz_down) / dz
                out_v[i - 1, j - 1, k - 1] += (xy_up - yx_down) / dx + yy + (yz_up - yz_down) / dz
                out_w[i - 1, j - 1, k - 1] += (xz_up - zx_down) / dx + (yz_up - zy_down) / dy + zz


def add_stress_divergence(u, v, w, nu, metrics, dx, dz: float, out) -> None:
    """``out[a] += ∂_j (2 ν_t S_aj)`` at each component's owned faces (``out``: shape
    ``(3, nx, ny, nz)``); ``nu`` is ν_t at the cell centres, ghosted like the velocity;
    ``dx`` as in :func:`eddy_viscosity`."""
    if nu.shape != u.shape:
        raise ValueError(f"nu has shape {nu.shape}, expected the velocity's {u.shape}")
    x = x_metrics(dx, u)
    _add_stress_divergence(
        u, v, w, nu, x.width, x.gap, float(dz), metrics.width.ravel(), metrics.width_up.ravel(),
        metrics.gap.ravel(), metrics.gap_down.ravel(), out[0], out[1], out[2],
    )

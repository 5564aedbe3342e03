"""Staggered (MAC) grid in cylindrical coordinates (x, r, θ), for pipes, annuli and fans.

Axes 0, 1, 2 of every array are x, r, θ, so the pencil machinery of the Cartesian solver
applies with y read as r and z as θ. x is uniform, periodic or open (an inflow and an
outflow: zero pressure gradient at both ends); θ is periodic over the
full circle or over a sector ``2π / sectors`` (one passage of an N-bladed fan); r runs
from ``inner_radius`` (0: through the axis, a pipe; > 0: an annulus with a hub) to
``radius``, uniform, clustered towards the walls, or (through the axis) towards the axis,
where a body on the axis (a sphere in an axisymmetric flow) wants fine cells.

Unknowns follow Verzicco & Orlandi (1996): pressure at cell centres; ``u_x`` on x-faces,
``q_r = r u_r`` on r-faces and ``u_θ`` on θ-faces, each stored at the index of the cell
whose upper face it sits on. ``q_r`` is zero on the axis exactly (``r = 0``), so no value
is ever needed there, and the radial flux through the axis vanishes in every
finite-volume balance: that is how the axis singularity is handled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tachyflow.numerics.grid import (
    StreamwiseFaces,
    WallNormalFaces,
    streamwise_faces,
    tanh_faces,
)


def radial_faces(
    cells: int, inner: float, outer: float, stretching: float, towards: str = "walls"
) -> np.ndarray:
    """``cells + 1`` radial faces from ``inner`` to ``outer``, clustered towards the walls
    (both walls of an annulus; only the outer one of a pipe, whose inner end is the axis),
    or, with ``towards = "axis"`` (through the axis only), fine about the axis:
    ``r = outer sinh(s ξ) / sinh(s)`` for ``ξ`` uniform in [0, 1] and ``s`` the
    stretching, a spacing of about ``(s / cells) sqrt(r0² + r²)`` with
    ``r0 = outer / sinh(s)``: nearly uniform out to ``r0``, growing steadily beyond (the
    first ring is not made finer than the rest of the core, so the azimuthal couplings
    there do not cut the time step)."""
    if towards not in RADIAL_CLUSTERING:
        raise ValueError(f"clustering must be one of {RADIAL_CLUSTERING}, got {towards!r}")
    if towards == "axis" and inner > 0:
        raise ValueError(f"clustering towards the axis needs inner_radius = 0, got {inner!r}")
    if inner > 0 or stretching == 0:
        return inner + tanh_faces(cells, outer - inner, stretching)
    if towards == "axis":
        return outer * np.sinh(stretching * np.linspace(0.0, 1.0, cells + 1)) / np.sinh(stretching)
    # Half of a two-sided tanh distribution: clustered at the wall, coarse at the axis.
    return tanh_faces(2 * cells, 2 * outer, stretching)[cells:] - outer


RADIAL_CLUSTERING = ("walls", "axis")


@dataclass(frozen=True)
class CylindricalGrid(WallNormalFaces, StreamwiseFaces):
    """Geometry of a cylindrical grid (MPI-free; every rank holds all of it).

    Parameters
    ----------
    shape : (int, int, int)
        Cells along x, r, θ.
    length : float
        Length of the domain in x.
    radius : float
        Outer radius (a wall).
    inner_radius : float
        0 for a domain through the axis, else the radius of the inner wall (hub).
    sectors : int
        The domain spans ``2π / sectors`` in θ, periodic.
    stretching : float
        tanh clustering of the radial faces towards the walls (0: uniform).
    periodic_x : bool
        Periodic in x, else open: an inflow at ``x = 0`` and an outflow at ``x = length``.
    clustering : str
        ``"walls"``, or ``"axis"``: the ``stretching`` makes the faces fine about the axis
        instead (with ``inner_radius = 0``; see :func:`radial_faces`).
    x_zone : (float, float, int), optional
        An open x refined round ``[start, stop]`` with ``cells`` uniform cells there,
        the others growing geometrically to both ends
        (:func:`~tachyflow.numerics.grid.zone_faces`).
    """

    shape: tuple[int, int, int]
    length: float
    radius: float
    inner_radius: float = 0.0
    sectors: int = 1
    stretching: float = 0.0
    periodic_x: bool = True
    clustering: str = "walls"
    x_zone: tuple[float, float, int] | None = None
    faces_y: np.ndarray = field(init=False, repr=False, compare=False)
    faces_x: np.ndarray = field(init=False, repr=False, compare=False)

    periodic_y = False  # r is bounded by the axis or a wall and by a wall
    axis_names = ("x", "r", "θ")

    def __post_init__(self):
        if len(self.shape) != 3 or any(int(n) < 1 for n in self.shape):
            raise ValueError(f"grid shape must be 3 positive integers, got {self.shape}")
        if not self.length > 0:
            raise ValueError(f"length must be positive, got {self.length!r}")
        if not 0 <= self.inner_radius < self.radius:
            raise ValueError(
                f"radii must satisfy 0 <= inner_radius < radius, got inner_radius = "
                f"{self.inner_radius!r}, radius = {self.radius!r}"
            )
        if not isinstance(self.sectors, int) or self.sectors < 1:
            raise ValueError(f"sectors must be a positive integer, got {self.sectors!r}")
        if not self.stretching >= 0:
            raise ValueError(f"stretching must be >= 0, got {self.stretching!r}")
        faces = radial_faces(
            self.shape[1], self.inner_radius, self.radius, self.stretching, self.clustering
        )
        object.__setattr__(self, "faces_y", faces)
        if self.x_zone is not None and self.periodic_x:
            raise ValueError(f"a periodic x must be uniform (no x_zone), got {self.x_zone!r}")
        object.__setattr__(
            self, "faces_x", streamwise_faces(self.shape[0], self.length, self.x_zone)
        )

    def laminar_profile(self) -> np.ndarray:
        """The developed laminar axial velocity at the centres in r, unscaled:
        Hagen–Poiseuille through the axis, the annular Poiseuille profile with a hub."""
        r, outer, inner = self.centres_y, self.radius, self.inner_radius
        if inner == 0:
            return 1.0 - (r / outer) ** 2
        return outer**2 - r**2 + (outer**2 - inner**2) * np.log(r / outer) / np.log(outer / inner)

    @property
    def through_axis(self) -> bool:
        """True when the domain contains the axis (a pipe), False for an annulus."""
        return self.inner_radius == 0

    @property
    def lengths(self) -> tuple[float, float, float]:
        """Extent along x, r and θ (radians)."""
        return (self.length, self.radius - self.inner_radius, 2 * np.pi / self.sectors)


    @property
    def spacing_z(self) -> float:
        """Uniform cell width in θ (radians)."""
        return 2 * np.pi / (self.sectors * self.shape[2])

    def pressure_bands_y(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bands of the radial part of the cell-centred Laplacian (finite volumes).

        Row ``j``: ``(r_f[j+1] F[j+1] - r_f[j] F[j]) / (r_c[j] Δr[j])`` with
        ``F[f] = (p[f] - p[f-1]) / distance[f]``; no flux through the walls, and none
        through the axis, where ``r_f = 0``.
        """
        widths, distances = self.widths_y, self.centre_distances_y()
        faces, centres = self.faces_y, self.centres_y
        lower = faces[:-1] / (centres * widths * distances[:-1])
        upper = faces[1:] / (centres * widths * distances[1:])
        lower[0] = upper[-1] = 0.0
        return lower, -(lower + upper), upper

    @property
    def azimuthal_weights_y(self) -> np.ndarray:
        """``1 / r_c²``: the factor of the θ second difference in row ``j``."""
        return 1.0 / self.centres_y**2

    @property
    def volume_weights_y(self) -> np.ndarray:
        """Each radial cell's share of the cross-section (``r_c Δr``, normalised)."""
        areas = self.centres_y * self.widths_y
        return areas / areas.sum()

    @property
    def wall_distances_y(self) -> np.ndarray:
        """Distance of each cell centre from the nearer wall (the outer one in a pipe)."""
        centres = self.centres_y
        if self.through_axis:
            return self.radius - centres
        return np.minimum(centres - self.inner_radius, self.radius - centres)

    @property
    def outer_scale(self) -> float:
        """The pipe's radius, or the annulus's half gap."""
        return self.radius if self.through_axis else 0.5 * (self.radius - self.inner_radius)

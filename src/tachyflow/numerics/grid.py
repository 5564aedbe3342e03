"""Staggered (MAC) Cartesian grid: x and z periodic and uniform, y uniform or stretched.

Pressure lives at cell centres; velocity component ``u`` on x-faces, ``v`` on y-faces and
``w`` on z-faces, each stored at the index of the cell whose upper face it sits on. In y,
``faces_y`` (``ny + 1`` values) define the cells, so walls may be clustered with a tanh
stretching; a periodic y must be uniform.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def tanh_faces(ny: int, length: float, stretching: float) -> np.ndarray:
    """``ny + 1`` face positions in ``[0, length]`` clustered towards both walls.

    ``stretching = 0`` gives uniform spacing; larger values cluster more strongly.
    """
    uniform = np.linspace(-1.0, 1.0, ny + 1)
    if stretching == 0:
        return 0.5 * length * (1.0 + uniform)
    return 0.5 * length * (1.0 + np.tanh(stretching * uniform) / np.tanh(stretching))


class WallNormalFaces:
    """Cell widths, centres and centre distances along axis 1 from ``faces_y`` (for grids
    with a ``shape``, ``faces_y`` and ``periodic_y``)."""

    @property
    def widths_y(self) -> np.ndarray:
        """Cell widths along axis 1 (``ny`` values)."""
        return np.diff(self.faces_y)

    @property
    def centres_y(self) -> np.ndarray:
        """Cell-centre positions along axis 1 (``ny`` values)."""
        return 0.5 * (self.faces_y[:-1] + self.faces_y[1:])

    def centre_distances_y(self) -> np.ndarray:
        """Distance between the centres on either side of each face (``ny + 1`` values).

        Faces 0 and ``ny``: across the periodic boundary, or from the wall (or axis) to
        the first centre (half a cell).
        """
        widths = self.widths_y
        distances = np.empty(self.shape[1] + 1)
        distances[1:-1] = 0.5 * (widths[:-1] + widths[1:])
        if self.periodic_y:
            distances[0] = distances[-1] = 0.5 * (widths[0] + widths[-1])
        else:
            distances[0], distances[-1] = 0.5 * widths[0], 0.5 * widths[-1]
        return distances


@dataclass(frozen=True)
class StaggeredGrid(WallNormalFaces):
    """Geometry of the grid (MPI-free; every rank holds all of it, it is small).

    Parameters
    ----------
    shape : (int, int, int)
        Cells along x, y, z.
    lengths : (float, float, float)
        Domain size ``Lx, Ly, Lz``.
    periodic_y : bool
        Periodic in y (else no-slip walls at ``y = 0`` and ``y = Ly``).
    stretching : float
        tanh clustering of y faces towards the walls (0: uniform; walls only).
    periodic_x : bool
        Periodic in x, else open: an inflow at ``x = 0`` and an outflow at ``x = Lx``.
    """

    shape: tuple[int, int, int]
    lengths: tuple[float, float, float]
    periodic_y: bool = True
    stretching: float = 0.0
    periodic_x: bool = True
    faces_y: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if len(self.shape) != 3 or any(int(n) < 1 for n in self.shape):
            raise ValueError(f"grid shape must be 3 positive integers, got {self.shape}")
        if len(self.lengths) != 3 or any(not float(length) > 0 for length in self.lengths):
            raise ValueError(f"domain lengths must be 3 positive numbers, got {self.lengths}")
        if self.stretching < 0:
            raise ValueError(f"stretching must be >= 0, got {self.stretching}")
        if self.periodic_y and self.stretching != 0:
            raise ValueError("a periodic y direction must be uniform (stretching = 0)")
        object.__setattr__(
            self, "faces_y", tanh_faces(self.shape[1], self.lengths[1], self.stretching)
        )

    def laminar_profile(self) -> np.ndarray:
        """The developed laminar streamwise velocity at the centres in y, unscaled: the
        parabola between walls, uniform without them."""
        if self.periodic_y:
            return np.ones(self.shape[1])
        y = self.centres_y
        return y * (self.lengths[1] - y)

    @property
    def spacing_x(self) -> float:
        """Uniform cell width in x."""
        return self.lengths[0] / self.shape[0]

    @property
    def spacing_z(self) -> float:
        """Uniform cell width in z."""
        return self.lengths[2] / self.shape[2]

    # The z second difference enters every row alike (a cylindrical grid weights it by 1/r²).
    azimuthal_weights_y = None
    axis_names = ("x", "y", "z")

    @property
    def volume_weights_y(self) -> np.ndarray:
        """Each y cell's share of the domain (its width over Ly)."""
        return self.widths_y / self.lengths[1]

    @property
    def wall_distances_y(self) -> np.ndarray | None:
        """Distance of each cell centre from the nearer wall (None without walls)."""
        if self.periodic_y:
            return None
        return np.minimum(self.centres_y, self.lengths[1] - self.centres_y)

    @property
    def outer_scale(self) -> float:
        """The channel's half-height (half of Ly)."""
        return 0.5 * self.lengths[1]

    def pressure_bands_y(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bands of the y part of the cell-centred Laplacian (finite volumes).

        Row ``j``: ``(flux[j+1] - flux[j]) / width[j]`` with
        ``flux[f] = (p[f] - p[f-1]) / distance[f]``. Walls: zero flux (Neumann), and
        ``lower[0] = upper[-1] = 0``; periodic: those are the corner couplings.
        """
        widths, distances = self.widths_y, self.centre_distances_y()
        lower = 1.0 / (widths * distances[:-1])
        upper = 1.0 / (widths * distances[1:])
        if not self.periodic_y:
            lower[0] = 0.0
            upper[-1] = 0.0
        return lower, -(lower + upper), upper

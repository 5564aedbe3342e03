"""Staggered (MAC) Cartesian grid: x and z periodic and uniform, y uniform or stretched.

Pressure lives at cell centres; velocity component ``u`` on x-faces, ``v`` on y-faces and
``w`` on z-faces, each stored at the index of the cell whose upper face it sits on. In y,
``faces_y`` (``ny + 1`` values) define the cells, so walls may be clustered with a tanh
stretching, or the middle of y resolved by a uniform core between geometrically growing
cells (a body between far walls); a periodic y must be uniform.
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


def core_faces(ny: int, length: float, core_width: float, core_cells: int) -> np.ndarray:
    """``ny + 1`` face positions in ``[0, length]``: ``core_cells`` uniform cells across a
    band ``core_width`` wide in the middle, then on either side ``(ny - core_cells) / 2``
    cells whose widths grow by a constant ratio from the core's spacing to the wall.

    Raises ValueError unless the cells outside the core are a positive even number and
    the ratio is at least 1 (the core is no finer than a uniform grid would be).
    """
    outer_cells, odd = divmod(ny - core_cells, 2)
    if core_cells < 1 or outer_cells < 1 or odd:
        raise ValueError(
            f"core_cells must be positive and leave an even positive number of the {ny} "
            f"cells outside the core, got core_cells = {core_cells!r}"
        )
    if not 0 < core_width < length:
        raise ValueError(f"core_width must be in (0, {length}), got {core_width!r}")
    spacing = core_width / core_cells
    outer = 0.5 * (length - core_width)
    if outer_cells * spacing > outer:
        raise ValueError(
            f"the core spacing {spacing:.4g} is coarser than the {outer_cells} cells on either "
            f"side of it need to reach the wall ({outer:.4g}): refine the core or use fewer cells"
        )
    powers = np.arange(1, outer_cells + 1)

    def excess(ratio: float) -> float:
        return spacing * float(np.sum(ratio**powers)) - outer

    from scipy.optimize import brentq  # here: 0.6 s to import, for every run otherwise

    ratio = 1.0 if excess(1.0) == 0 else brentq(excess, 1.0, 2.0 ** (64 / outer_cells) + 1.0)
    growth = np.cumsum(spacing * ratio**powers)
    growth *= outer / growth[-1]  # exactly to the wall, whatever brentq's tolerance
    core = 0.5 * (length - core_width) + spacing * np.arange(core_cells + 1)
    faces = np.concatenate([(core[0] - growth)[::-1], core, core[-1] + growth])
    faces[0], faces[-1] = 0.0, length  # the walls exactly, not up to round-off
    return faces


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
    core : (float, int), optional
        Instead of ``stretching``: a uniform core ``core[0]`` wide with ``core[1]`` cells
        in the middle of y, the other cells growing geometrically towards the walls
        (:func:`core_faces`; walls only).
    """

    shape: tuple[int, int, int]
    lengths: tuple[float, float, float]
    periodic_y: bool = True
    stretching: float = 0.0
    periodic_x: bool = True
    core: tuple[float, int] | None = None
    faces_y: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if len(self.shape) != 3 or any(int(n) < 1 for n in self.shape):
            raise ValueError(f"grid shape must be 3 positive integers, got {self.shape}")
        if len(self.lengths) != 3 or any(not float(length) > 0 for length in self.lengths):
            raise ValueError(f"domain lengths must be 3 positive numbers, got {self.lengths}")
        if self.stretching < 0:
            raise ValueError(f"stretching must be >= 0, got {self.stretching}")
        if self.periodic_y and (self.stretching != 0 or self.core is not None):
            raise ValueError("a periodic y direction must be uniform (stretching = 0, no core)")
        if self.core is None:
            faces = tanh_faces(self.shape[1], self.lengths[1], self.stretching)
        elif self.stretching != 0:
            raise ValueError(f"a core and a stretching exclude each other, got {self.core!r} "
                             f"and stretching = {self.stretching!r}")
        else:
            faces = core_faces(self.shape[1], float(self.lengths[1]), *self.core)
        object.__setattr__(self, "faces_y", faces)

    @classmethod
    def from_section(cls, section) -> StaggeredGrid:
        """The grid of a case's ``[grid]`` (a ``GridSection``)."""
        return cls(
            tuple(section.cells),
            tuple(section.lengths),
            periodic_y=not section.walls,
            stretching=section.stretching,
            periodic_x=section.x_boundaries != "inflow-outflow",
            core=(section.core_width, section.core_cells) if section.core_cells else None,
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

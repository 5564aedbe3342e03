"""Staggered (MAC) Cartesian grid: z periodic and uniform, y uniform or stretched, x
periodic and uniform or open and refined round a zone.

Pressure lives at cell centres; velocity component ``u`` on x-faces, ``v`` on y-faces and
``w`` on z-faces, each stored at the index of the cell whose upper face it sits on. In y,
``faces_y`` (``ny + 1`` values) define the cells, so walls may be clustered with a tanh
stretching, or the middle of y resolved by a uniform core between geometrically growing
cells (a body between far walls); a periodic y must be uniform. An open x may likewise
have a uniform zone round a body, the cells growing geometrically to the inflow and the
outflow (``faces_x``, :func:`zone_faces`).
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


def _grown_widths(spacing: float, cells: int, length: float, name: str,
                  ramp: bool = False) -> np.ndarray:
    """``cells`` widths growing by one constant ratio (at least 1) from ``spacing`` (the
    first is ``spacing`` times the ratio) that add up to ``length`` exactly. With
    ``ramp`` the ratio itself rises linearly from 1 over the first quarter of the cells
    (at least one) and stays constant beyond: the spacing's growth starts smoothly, so a
    finite-volume operator stays second order across the junction (an abrupt ratio is a
    kink in the spacing: first order there)."""
    if cells * spacing > length * (1.0 + 1e-12):
        raise ValueError(
            f"the {name} spacing {spacing:.4g} is coarser than the {cells} cells beside it need "
            f"to cover {length:.4g}: refine the {name} or use fewer cells"
        )
    steps = np.arange(1, cells + 1, dtype=np.float64)
    if ramp:  # the exponent of the ratio: the partial sums of min(l / ramp, 1)
        ramp_cells = max(1, cells // 4)
        powers = np.cumsum(np.minimum(steps / ramp_cells, 1.0))
    else:
        powers = steps

    def excess(ratio: float) -> float:
        return spacing * float(np.sum(ratio**powers)) - length

    from scipy.optimize import brentq  # here: 0.6 s to import, for every run otherwise

    ratio = 1.0 if excess(1.0) >= 0 else brentq(excess, 1.0, 2.0 ** (64 / cells) + 1.0)
    # (The ramp's largest exponent is over half the plain one's: the bracket still holds.)
    widths = spacing * ratio**powers
    return widths * (length / widths.sum())  # exactly the length, whatever brentq's tolerance


def growth_ratio(widths: np.ndarray) -> float:
    """The largest ratio of neighbouring cell widths (either way): a stretched grid's
    smoothness."""
    widths = np.asarray(widths, dtype=np.float64)
    if widths.size < 2:
        return 1.0
    ratios = widths[1:] / widths[:-1]
    return float(max(ratios.max(), 1.0 / ratios.min()))


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
    growth = np.cumsum(_grown_widths(spacing, outer_cells, outer, "core"))
    core = 0.5 * (length - core_width) + spacing * np.arange(core_cells + 1)
    faces = np.concatenate([(core[0] - growth)[::-1], core, core[-1] + growth])
    faces[0], faces[-1] = 0.0, length  # the walls exactly, not up to round-off
    return faces


def zone_faces(n: int, length: float, start: float, stop: float, zone_cells: int) -> np.ndarray:
    """``n + 1`` face positions in ``[0, length]``: ``zone_cells`` uniform cells over the
    band ``[start, stop]``, the other cells on either side growing geometrically from the
    band's spacing to the ends (the ratio rising smoothly from 1 over the first quarter of
    them: no kink in the spacing), shared between the two sides so that their largest
    ratios are as near each other as whole cells allow (a band touching an end has no cells on
    that side). The streamwise refinement round a body (``[grid] x_zone``).
    """
    if not 0.0 <= start < stop <= length:
        raise ValueError(f"the zone must satisfy 0 <= start < stop <= {length}, got "
                         f"[{start!r}, {stop!r}]")
    outer = n - zone_cells
    sides = (start, length - stop)
    needed = sum(side > 0 for side in sides)
    if zone_cells < 1 or outer < needed or (needed == 0 and outer):
        raise ValueError(
            f"zone_cells must be positive and leave a cell of the {n} on each side of the "
            f"zone that is not at an end, got zone_cells = {zone_cells!r}"
        )
    spacing = (stop - start) / zone_cells

    def ratio(cells: int, side: float) -> float:  # the side's largest ratio of neighbours
        widths = np.concatenate(([spacing], _grown_widths(spacing, cells, side, "zone",
                                                           ramp=True)))
        return growth_ratio(widths)

    if needed == 2:
        # The log-ratio before the zone falls and the one after it rises with the cells
        # before it: bisect for where they cross.
        # Each side's cells at the zone's spacing must not overreach its end.
        low = max(1, outer - int(sides[1] / spacing * (1 + 1e-12)))
        high = min(outer - 1, int(sides[0] / spacing * (1 + 1e-12)))
        if low > high:
            raise ValueError(
                f"the zone's spacing {spacing:.4g} is coarser than the {outer} cells outside "
                f"it need to reach the ends: refine the zone or use fewer cells"
            )
        while high - low > 1:
            middle = (low + high) // 2
            if ratio(middle, sides[0]) > ratio(outer - middle, sides[1]):
                low = middle
            else:
                high = middle
        before = min((low, high), key=lambda c: abs(np.log(ratio(c, sides[0]))
                                                   - np.log(ratio(outer - c, sides[1]))))
    else:
        before = outer if sides[0] > 0 else 0
    parts = [np.array([start])]
    if before:
        grown = _grown_widths(spacing, before, sides[0], "zone", ramp=True)
        parts = [start - np.cumsum(grown)[::-1],
                 parts[0]]
    zone = start + spacing * np.arange(1, zone_cells + 1)
    zone[-1] = stop
    parts.append(zone)
    if outer - before:
        grown = _grown_widths(spacing, outer - before, sides[1], "zone", ramp=True)
        parts.append(stop + np.cumsum(grown))
    faces = np.concatenate(parts)
    faces[0], faces[-1] = 0.0, length
    return faces


class StreamwiseFaces:
    """Cell widths, centres and centre distances along axis 0 from ``faces_x`` (for grids
    with a ``shape``, ``faces_x``, ``lengths`` or ``length`` and ``periodic_x``):
    uniform, or refined round a zone of an open x (:func:`zone_faces`)."""

    @property
    def widths_x(self) -> np.ndarray:
        """Cell widths along axis 0 (``nx`` values)."""
        return np.diff(self.faces_x)

    @property
    def centres_x(self) -> np.ndarray:
        """Cell-centre positions along axis 0 (``nx`` values)."""
        return 0.5 * (self.faces_x[:-1] + self.faces_x[1:])

    @property
    def uniform_x(self) -> bool:
        """Whether every cell has the same width along axis 0."""
        return self.x_zone is None

    @property
    def spacing_x(self) -> float:
        """The uniform cell width along axis 0; ValueError on a stretched x (use
        :attr:`widths_x`)."""
        if not self.uniform_x:
            raise ValueError("x is stretched ([grid] x_zone): its cells have no single "
                             "spacing; this part of tachyflow needs a uniform x")
        return float(self.faces_x[-1]) / self.shape[0]

    def ghosted_widths_x(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Widths of cells ``start - 1 .. stop`` (x-ghosts included): beyond an open end
        the end cell's mirror, across a periodic one the other end's."""
        widths = self.widths_x
        stop = len(widths) if stop is None else stop
        ends = (widths[-1], widths[0]) if self.periodic_x else (widths[0], widths[-1])
        ghosted = np.concatenate(([ends[0]], widths, [ends[1]]))
        return ghosted[start : stop + 2]

    def ghosted_faces_x(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Upper faces of cells ``start - 1 .. stop`` (where u of those cells sits), with
        the ghost cells of :meth:`ghosted_widths_x`."""
        widths = self.ghosted_widths_x(start, stop)
        return self.faces_x[start] + np.concatenate(([0.0], np.cumsum(widths[1:])))

    def ghosted_centres_x(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Centres of cells ``start - 1 .. stop``, with the ghost cells of
        :meth:`ghosted_widths_x`."""
        return self.ghosted_faces_x(start, stop) - 0.5 * self.ghosted_widths_x(start, stop)


def streamwise_faces(nx: int, length: float, zone) -> np.ndarray:
    """``nx + 1`` faces over ``[0, length]``: uniform, or with ``zone = (start, stop,
    cells)`` refined round it (:func:`zone_faces`)."""
    if zone is None:
        return np.linspace(0.0, length, nx + 1)
    start, stop, cells = zone
    return zone_faces(nx, float(length), float(start), float(stop), int(cells))


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
class StaggeredGrid(WallNormalFaces, StreamwiseFaces):
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
    x_zone : (float, float, int), optional
        An open x refined round ``[start, stop]`` with ``cells`` uniform cells there,
        the others growing geometrically to both ends (:func:`zone_faces`).
    """

    shape: tuple[int, int, int]
    lengths: tuple[float, float, float]
    periodic_y: bool = True
    stretching: float = 0.0
    periodic_x: bool = True
    core: tuple[float, int] | None = None
    x_zone: tuple[float, float, int] | None = None
    faces_y: np.ndarray = field(init=False, repr=False, compare=False)
    faces_x: np.ndarray = field(init=False, repr=False, compare=False)

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
        if self.x_zone is not None and self.periodic_x:
            raise ValueError(f"a periodic x must be uniform (no x_zone), got {self.x_zone!r}")
        object.__setattr__(
            self, "faces_x", streamwise_faces(self.shape[0], self.lengths[0], self.x_zone)
        )

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
            x_zone=(*section.x_zone, section.x_zone_cells) if section.x_zone_cells else None,
        )

    def laminar_profile(self) -> np.ndarray:
        """The developed laminar streamwise velocity at the centres in y, unscaled: the
        parabola between walls, uniform without them."""
        if self.periodic_y:
            return np.ones(self.shape[1])
        y = self.centres_y
        return y * (self.lengths[1] - y)

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
    def volume_weights_x(self) -> np.ndarray:
        """Each x cell's share of the domain (its width over Lx)."""
        return self.widths_x / self.lengths[0]

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

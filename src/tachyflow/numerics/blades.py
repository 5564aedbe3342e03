"""Axial-fan blades as closed triangulated surfaces (MPI-free): NACA 4-digit or 65-series
sections wrapped onto cylinders and stacked along the span.

At each span station of radius ``r`` the section is drawn in the developed plane
(``m`` along the axis x, ``s = r θ`` around it): a profile of chord ``c(r)`` and thickness
``t`` from a family registered in :data:`SECTIONS` (``naca4``: maximum camber ``f(r)`` at
``p`` of the chord; ``naca65``: the 65-010 thickness form on the a = 1.0 mean line of
design lift coefficient ``c_li(r)``, the classic compressor-blade section), its chord at
the stagger angle ``γ(r)`` from the axis (0: the chord along x, a flat plate edge-on to an axial
inflow), turned about its quarter chord, which sits at ``x = centre`` and ``θ = angle``
shifted back by the sweep ``(r - r_root) tan(sweep)`` along the chord. Chord, stagger
and camber (or design lift) vary linearly from root to tip. The stations' outlines, all
with the same number of points, are joined into a tube and closed by a cap at each end,
so the surface is watertight (an inside is defined) for the signed distances of
:class:`~tachyflow.numerics.immersed.TriangulatedBody`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.airfoils import naca4_surfaces, naca65_surfaces


def _outline(upper: np.ndarray, lower: np.ndarray) -> np.ndarray:
    # Trailing edge -> leading edge over the upper side, back under the lower side.
    return np.concatenate([upper[::-1], lower[1:-1]])


def naca4_outline(camber: float, position: float, thickness: float, points: int):
    """A closed NACA 4-digit outline (trailing edge closed), counter-clockwise from the
    trailing edge over the upper side: ``(2 points - 2, 2)`` chord-normalised coordinates,
    cosine-spaced."""
    return _outline(*naca4_surfaces(camber, position, thickness, points))


def naca65_outline(design_lift: float, thickness: float, points: int):
    """A closed NACA 65-series outline (65-010 thickness scaled to ``thickness``, a = 1.0
    mean line of ``design_lift``), ordered as :func:`naca4_outline`."""
    return _outline(*naca65_surfaces(design_lift, thickness, points))


def _blend(pair, fraction: float) -> float:
    """The root-to-tip ``pair`` interpolated linearly at the span ``fraction``."""
    return pair[0] + fraction * (pair[1] - pair[0])


# Section families by name: the outline of a blade's section at a span fraction (0: root).
SECTIONS = {
    "naca4": lambda design, fraction: naca4_outline(
        _blend(design.camber, fraction), design.camber_position, design.thickness, design.points
    ),
    "naca65": lambda design, fraction: naca65_outline(
        _blend(design.design_lift, fraction), design.thickness, design.points
    ),
}


@dataclass(frozen=True)
class BladeDesign:
    """One blade of an axial fan (lengths in the case's units, angles in degrees).

    ``root_radius`` should lie a little inside the hub so that blade and hub overlap;
    ``tip_radius`` is the duct radius minus the tip clearance.
    """

    root_radius: float
    tip_radius: float
    chord: tuple[float, float] = (0.3, 0.2)  # root, tip
    stagger: tuple[float, float] = (45.0, 60.0)  # root, tip: from the axis
    camber: tuple[float, float] = (0.04, 0.02)  # root, tip: fraction of the chord
    camber_position: float = 0.4
    section: str = "naca4"  # a family of SECTIONS
    design_lift: tuple[float, float] = (1.0, 0.6)  # root, tip: naca65's c_li
    thickness: float = 0.08
    sweep: float = 0.0
    centre: float = 0.0  # x of the quarter chord at the root
    angle: float = 0.0  # θ of the quarter chord at the root (radians)
    # +1: the leading edge on the side of smaller θ (a fan turning towards -θ); -1: mirrored,
    # for a fan turning towards +θ.
    hand: int = 1
    stations: int = 12
    points: int = 40  # per side of each section

    def __post_init__(self):
        if not 0 <= self.root_radius < self.tip_radius:
            raise ValueError(
                f"blade radii must satisfy 0 <= root < tip, got root_radius = "
                f"{self.root_radius!r}, tip_radius = {self.tip_radius!r}"
            )
        if min(self.chord) <= 0:
            raise ValueError(f"blade chord must be positive at root and tip, got {self.chord}")
        if not 0 < self.thickness < 0.5:
            raise ValueError(f"blade thickness must be in (0, 0.5) of the chord, got "
                             f"{self.thickness!r}")
        if not 0 < self.camber_position < 1 or not all(0 <= f < 0.2 for f in self.camber):
            raise ValueError(f"blade camber must be in [0, 0.2) at a position in (0, 1), got "
                             f"{self.camber} at {self.camber_position!r}")
        if self.section not in SECTIONS:
            raise ValueError(f"blade section must be one of {sorted(SECTIONS)}, got "
                             f"{self.section!r}")
        if not all(0 <= lift <= 3 for lift in self.design_lift):
            raise ValueError(f"blade design lift coefficients must be in [0, 3], got "
                             f"{self.design_lift}")
        if self.hand not in (1, -1):
            raise ValueError(f"blade hand must be 1 or -1, got {self.hand!r}")
        if self.stations < 2 or self.points < 8:
            raise ValueError(f"a blade needs >= 2 stations and >= 8 points per side, got "
                             f"{self.stations}, {self.points}")

    def triangles(self) -> tuple[np.ndarray, np.ndarray]:
        """Vertices (n, 3) in Cartesian (x, y = r cos θ, z = r sin θ) and faces (m, 3),
        outward-oriented and watertight."""
        loops = []
        for fraction in np.linspace(0.0, 1.0, self.stations):
            radius = _blend((self.root_radius, self.tip_radius), fraction)
            loops.append(
                wrap_section(
                    SECTIONS[self.section](self, fraction),
                    radius,
                    _blend(self.chord, fraction),
                    _blend(self.stagger, fraction),
                    centre=self.centre,
                    angle=self.angle,
                    hand=self.hand,
                    sweep=(radius - self.root_radius) * math.tan(math.radians(self.sweep)),
                )
            )
        return stack_loops(loops)

    def surface(self):
        """The blade as a watertight ``trimesh.Trimesh`` (normals outward)."""
        return closed_surface(*self.triangles(), "blade")


def wrap_section(
    outline: np.ndarray,
    radius: float,
    chord: float,
    stagger: float,
    *,
    centre: float = 0.0,
    angle: float = 0.0,
    hand: int = 1,
    sweep: float = 0.0,
    dihedral: float = 0.0,
) -> np.ndarray:
    """One section wrapped onto the cylinder of ``radius``: its closed loop ``(n, 3)`` in
    Cartesian ``(x, y = r cos θ, z = r sin θ)``.

    Parameters
    ----------
    outline : ndarray (n, 2)
        The chord-normalised outline (leading edge at ``(0, 0)``, trailing edge at
        ``(1, 0)``), e.g. :func:`naca4_outline`.
    radius, chord : float
        The cylinder's radius and the section's chord (lengths).
    stagger : float
        The chord's angle from the axis, degrees (0: the chord along x).
    centre, angle : float
        ``x`` and ``θ`` (radians) of the quarter chord before the shifts.
    hand : int
        +1: the leading edge on the side of smaller θ; -1: mirrored.
    sweep, dihedral : float
        Shifts of the section (lengths): along its chord (towards the trailing edge) and
        normal to it (towards the outline's ``+y`` side, the suction side of a cambered
        section).
    """
    stagger = math.radians(stagger)
    along = (outline[:, 0] - 0.25) * chord + sweep  # from the quarter chord
    normal = outline[:, 1] * chord + dihedral
    m = centre + along * math.cos(stagger) - normal * math.sin(stagger)
    s = along * math.sin(stagger) + normal * math.cos(stagger)
    theta = angle + hand * s / radius
    return np.stack([m, radius * np.cos(theta), radius * np.sin(theta)], axis=1)


def stack_loops(loops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sections' loops, all ``(n, 3)`` and from root to tip, joined into a tube and closed
    by a cap at each end: vertices ``(k, 3)`` and faces ``(m, 3)``, watertight."""
    if len(loops) < 2 or len({len(loop) for loop in loops}) != 1:
        raise ValueError(
            f"stacking needs >= 2 loops of as many points, got {[len(x) for x in loops]}"
        )
    vertices = np.concatenate(loops)
    count = len(loops[0])
    faces = []
    for station in range(len(loops) - 1):
        here, there = station * count, (station + 1) * count
        for k in range(count):
            following = (k + 1) % count
            faces.append((here + k, here + following, there + k))
            faces.append((here + following, there + following, there + k))
    # Caps: a fan about each end loop's centroid.
    for station, flip in ((0, True), (len(loops) - 1, False)):
        start = station * count
        centre_index = len(vertices)
        vertices = np.vstack([vertices, vertices[start : start + count].mean(axis=0)])
        for k in range(count):
            triangle = (start + k, start + (k + 1) % count, centre_index)
            faces.append(triangle[::-1] if flip else triangle)
    return vertices, np.asarray(faces, dtype=np.int64)


def closed_surface(vertices: np.ndarray, faces: np.ndarray, what: str = "surface"):
    """``vertices`` and ``faces`` as a ``trimesh.Trimesh``, its normals turned outward, and
    checked: watertight, consistently wound, of positive volume (ValueError naming
    ``what`` otherwise: sections that self-intersect or fold)."""
    import trimesh

    mesh = trimesh.Trimesh(vertices, faces, process=True)
    trimesh.repair.fix_normals(mesh)
    if not mesh.is_watertight:
        raise ValueError(f"the {what} is not watertight (sections self-intersect?)")
    if not mesh.is_winding_consistent or not mesh.volume > 0:
        raise ValueError(
            f"the {what} is not a closed, consistently wound surface of positive volume "
            f"(volume {mesh.volume:.3g})"
        )
    return mesh

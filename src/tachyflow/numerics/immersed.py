"""Immersed boundaries by direct forcing (MPI-free): bodies as level sets, and the forcing
stencils that impose a body's velocity on a staggered grid, Cartesian or cylindrical.

A body is a level set ``φ`` (negative inside, positive in the fluid, ~ the distance to the
surface) with a rigid-body motion: at rest or turning steadily about an axis
(:class:`RigidMotion`: the level set stays put, a body of revolution or a rotor in its
own frame), or oscillating (:class:`OscillatingMotion`: translation and pitching, the
level set moves; :meth:`Body.placed` is the body where it is at a time). On each velocity
component's points:

* points inside a body take the body's velocity;
* *forcing points* (in the fluid, with a neighbour inside along a grid line) take the
  value interpolated linearly along that line between the surface crossing (the body's
  velocity there) and the next point out in the fluid, as Fadlun, Verzicco, Orlandi &
  Mohd-Yusof (2000) do; the grid line chosen is the one most nearly normal to the
  surface. That interpolation is second-order accurate, which is what the "direct
  forcing with second-order interpolation" of Kim, Kim & Choi (2001) achieves with its
  mass source; we project the forced velocity instead of adding the source, so the
  velocity left at the forcing points after the projection differs from the imposed
  one by O(Δt) (the pressure correction), a documented equivalent of the same order in
  space.

Stencils are built once per body position from the level set on a rank's ghosted piece
(the neighbours of its owned points are its halo), and applied as two gathers and a
scatter per component. The momentum they add is the force of the bodies on the fluid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

# -- bodies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RigidMotion:
    """A rigid rotation at ``angular_velocity`` (rad per unit time) about the line through
    ``centre`` along ``axis``; at rest when the angular velocity is 0."""

    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    angular_velocity: float = 0.0

    def __post_init__(self):
        axis = np.asarray(self.axis, dtype=float)
        if axis.shape != (3,) or not np.linalg.norm(axis) > 0:
            raise ValueError(f"axis must be a nonzero 3-vector, got {self.axis!r}")
        if np.shape(self.centre) != (3,):
            raise ValueError(f"centre must be a 3-vector, got {self.centre!r}")
        if not np.isfinite(self.angular_velocity):
            raise ValueError(f"angular_velocity must be finite, got {self.angular_velocity!r}")

    moving: ClassVar[bool] = False  # the level set stays where it is

    def velocity(self, points: np.ndarray, time: float = 0.0) -> np.ndarray:
        """Velocity ``ω × (p - c)`` at ``points`` (shape (n, 3)), at any ``time``."""
        axis = np.asarray(self.axis, dtype=float)
        omega = self.angular_velocity * axis / np.linalg.norm(axis)
        return np.cross(omega, points - np.asarray(self.centre, dtype=float))

    def body_frame(self, points: np.ndarray, time: float) -> np.ndarray:
        """Where ``points`` were at rest: the points themselves (the level set stays)."""
        return points


@dataclass(frozen=True)
class OscillatingMotion:
    """A prescribed rigid oscillation at ``frequency`` f (cycles per unit time):
    translation ``d(t) = translation sin(2π f t)`` (an amplitude vector) and pitching by
    ``θ(t) = pitch sin(2π f t + pitch_phase)`` (radians; phase in radians) about the line
    along ``pitch_axis`` through the moving ``centre + d(t)``. A body point at ``X`` at
    rest is at ``c + d(t) + R(θ(t)) (X - c)``, with velocity
    ``d'(t) + θ'(t) a × (x - c - d(t))``.
    """

    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pitch: float = 0.0
    pitch_axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    frequency: float = 1.0
    pitch_phase: float = 0.0

    moving: ClassVar[bool] = True

    def __post_init__(self):
        for name in ("centre", "translation"):
            value = getattr(self, name)
            if np.shape(value) != (3,) or not np.all(np.isfinite(value)):
                raise ValueError(f"{name} must be a finite 3-vector, got {value!r}")
        _unit(self.pitch_axis)
        _positive("frequency", self.frequency)
        for name in ("pitch", "pitch_phase"):
            if not np.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)!r}")

    def _state(self, time: float):
        """Displacement, its rate, the pitch angle and its rate at ``time``."""
        omega = 2 * np.pi * self.frequency
        translation = np.asarray(self.translation, dtype=float)
        phase = omega * time + self.pitch_phase
        return (
            translation * np.sin(omega * time),
            translation * omega * np.cos(omega * time),
            self.pitch * np.sin(phase),
            self.pitch * omega * np.cos(phase),
        )

    def _rotation(self, angle: float) -> np.ndarray:
        """The matrix turning by ``angle`` about the pitch axis (Rodrigues)."""
        a = _unit(self.pitch_axis)
        cross = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
        return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross

    def position(self, rest: np.ndarray, time: float) -> np.ndarray:
        """Where the body points at ``rest`` (shape (n, 3)) are at ``time``."""
        displacement, _, angle, _ = self._state(time)
        centre = np.asarray(self.centre, dtype=float)
        return centre + displacement + (rest - centre) @ self._rotation(angle).T

    def body_frame(self, points: np.ndarray, time: float) -> np.ndarray:
        """Where the body points now at ``points`` were at rest (inverse of
        :meth:`position`)."""
        displacement, _, angle, _ = self._state(time)
        centre = np.asarray(self.centre, dtype=float)
        return centre + (points - centre - displacement) @ self._rotation(angle)

    def velocity(self, points: np.ndarray, time: float = 0.0) -> np.ndarray:
        """The body's velocity at ``points`` (shape (n, 3)) at ``time``."""
        displacement, rate, _, angle_rate = self._state(time)
        arm = points - np.asarray(self.centre, dtype=float) - displacement
        return rate + np.cross(angle_rate * _unit(self.pitch_axis), arm)


class Body:
    """A solid: :meth:`level` (negative inside, where it is at rest) and its ``motion``
    (a :class:`RigidMotion` or an :class:`OscillatingMotion`)."""

    motion: RigidMotion = RigidMotion()

    def level(self, points: np.ndarray) -> np.ndarray:
        """Signed distance to the surface at ``points`` (shape (n, 3)), negative inside."""
        raise NotImplementedError

    def velocity(self, points: np.ndarray) -> np.ndarray:
        """The body's velocity at ``points`` (shape (n, 3)); a moving body has one only
        where it is at a time (:meth:`placed`)."""
        if self.motion.moving:
            raise ValueError(f"{type(self).__name__} moves: its velocity is that of "
                             f".placed(time)")
        return self.motion.velocity(points)

    def placed(self, time: float) -> Body:
        """The body where its motion has taken it at ``time`` (itself unless it moves)."""
        return PlacedBody(self, time) if self.motion.moving else self


class PlacedBody(Body):
    """A moving ``body`` frozen at ``time``: its level set carried there by its motion
    (rigid, so still a signed distance) and its velocity at that time."""

    def __init__(self, body: Body, time: float):
        self.body, self.time, self.motion = body, float(time), body.motion

    def level(self, points):
        return self.body.level(self.motion.body_frame(points, self.time))

    def velocity(self, points):
        return self.motion.velocity(points, self.time)

    def placed(self, time):
        return self.body.placed(time)


def _unit(vector) -> np.ndarray:
    vector = np.asarray(vector, dtype=float)
    if vector.shape != (3,) or not np.linalg.norm(vector) > 0:
        raise ValueError(f"axis must be a nonzero 3-vector, got {vector!r}")
    return vector / np.linalg.norm(vector)


def _positive(name: str, value) -> float:
    if not (isinstance(value, int | float) and np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class CircularCylinder(Body):
    """An infinitely long circular cylinder of ``radius`` about the line through ``centre``
    along ``axis``; with ``hollow`` the solid is outside it (a duct around the fluid)."""

    centre: tuple[float, float, float]
    radius: float
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    motion: RigidMotion = RigidMotion()
    hollow: bool = False

    def __post_init__(self):
        _positive("radius", self.radius)
        _unit(self.axis)

    def level(self, points):
        axis = _unit(self.axis)
        offset = points - np.asarray(self.centre, dtype=float)
        across = offset - np.outer(offset @ axis, axis)
        distance = np.linalg.norm(across, axis=1) - self.radius
        return -distance if self.hollow else distance


@dataclass(frozen=True)
class Slab(Body):
    """The slab of ``thickness`` about the plane through ``centre`` normal to ``normal``
    (unbounded along the plane: across a periodic box, a plate)."""

    centre: tuple[float, float, float]
    thickness: float
    normal: tuple[float, float, float] = (0.0, 1.0, 0.0)
    motion: RigidMotion = RigidMotion()

    def __post_init__(self):
        _positive("thickness", self.thickness)
        _unit(self.normal)

    def level(self, points):
        across = (points - np.asarray(self.centre, dtype=float)) @ _unit(self.normal)
        return np.abs(across) - 0.5 * self.thickness


@dataclass(frozen=True)
class Sphere(Body):
    """A sphere of ``radius`` about ``centre``."""

    centre: tuple[float, float, float]
    radius: float
    motion: RigidMotion = RigidMotion()

    def __post_init__(self):
        _positive("radius", self.radius)

    def level(self, points):
        return np.linalg.norm(points - np.asarray(self.centre, dtype=float), axis=1) - self.radius


class TriangulatedBody(Body):
    """A closed triangulated surface (any format trimesh reads: STL, OBJ, PLY, ...), its
    signed distance from trimesh; scaled by ``scale`` then moved by ``offset``. Further
    than 5 % of its size from its bounding box, :meth:`level` is the distance to the box.

    An inside-out surface (every triangle wound clockwise seen from outside: a negative
    enclosed volume) is turned right side out with a warning: trimesh's sign of the
    distance comes from the triangles' normals, so it would put the fluid inside.

    Raises ValueError naming the surface and its defect when it has no triangles, is not
    watertight, its triangles' windings disagree, it encloses no volume, an edge pierces a
    triangle (a self-intersection), or one of its parts is inside out without being a
    cavity of another (inside would be undefined in all of these).
    """

    def __init__(self, surface, scale: float = 1.0, offset=(0.0, 0.0, 0.0), motion=None,
                 crossings: bool = True):
        import trimesh

        mesh = surface if isinstance(surface, trimesh.Trimesh) else trimesh.load(
            surface, force="mesh"
        )
        mesh = _sound_surface(mesh.copy(), surface, crossings)
        mesh.apply_scale(_positive("scale", scale))
        mesh.apply_translation(np.asarray(offset, dtype=float))
        self.mesh = mesh
        self.motion = motion or RigidMotion()

    def level(self, points):
        import trimesh

        # Far from the bounding box the distance to the box (a lower bound, positive) is
        # enough: forcing needs distances only next to the surface.
        lower, upper = self.mesh.bounds
        margin = 0.05 * float(np.max(upper - lower))
        result = np.linalg.norm(np.maximum(lower - points, 0) + np.maximum(points - upper, 0),
                                axis=1)
        near = result < margin
        if near.any():  # trimesh: positive inside
            result[near] = -trimesh.proximity.signed_distance(self.mesh, points[near])
        return result


def _sound_surface(mesh, name, crossings: bool = True):
    """``mesh`` checked for an inside (see :class:`TriangulatedBody`), turned right side out
    when inside-out; ``name`` names it in the messages."""
    import warnings

    if len(mesh.faces) == 0:
        raise ValueError(f"surface {name!r} has no triangles")
    if not mesh.is_watertight:
        raise ValueError(f"surface {name!r} is not closed (watertight): no inside")
    if not mesh.is_winding_consistent:
        raise ValueError(f"surface {name!r} has triangles wound against their neighbours "
                         "(some flipped): no consistent inside")
    extent = float(np.max(mesh.extents))
    with np.errstate(invalid="ignore", divide="ignore"):  # trimesh's centre of a flat one
        volume = float(mesh.volume)
    # Relative to the bounding cube: round-off of a flat surface's volume is ~1e-16 of it.
    if not extent > 0 or abs(volume) <= 1e-9 * extent**3:
        raise ValueError(f"surface {name!r} encloses no volume (flat or degenerate: "
                         f"{volume:.3g} in a box {extent:.3g} wide)")
    pierced = _edge_crossings(mesh) if crossings else 0
    if pierced:
        raise ValueError(f"surface {name!r} intersects itself ({pierced} edge(s) pierce "
                         "its triangles): no single inside")
    if volume < 0:
        warnings.warn(f"surface {name!r} is inside out (its triangles wound clockwise seen "
                      f"from outside, volume {volume:.3g}): turned right side out",
                      stacklevel=3)
        mesh.invert()
    if mesh.body_count > 1:
        _check_parts(mesh, name)
    return mesh


def _check_parts(mesh, name) -> None:
    """ValueError when a part of a surface of several is inside out where it is not a
    cavity: a part of negative volume must lie inside another part (a hollow body's
    inner wall), else its inside would be fluid and its outside solid."""
    with np.errstate(invalid="ignore", divide="ignore"):
        parts = mesh.split(only_watertight=False)
        volumes = [float(part.volume) for part in parts]
    for index, (part, volume) in enumerate(zip(parts, volumes, strict=True)):
        if volume >= 0:
            continue
        point = part.vertices[:1]
        held = any(other.contains(point)[0] for k, other in enumerate(parts)
                   if k != index and volumes[k] > 0)
        if not held:
            raise ValueError(f"surface {name!r} has a part inside out among right-side-out "
                             f"ones (part {index + 1} of {len(parts)}, volume {volume:.3g}, "
                             "not a cavity of another): no consistent inside")


def _edge_crossings(mesh) -> int:
    """How many (edge, triangle) pairs of ``mesh`` cross, the triangle not one of the edge's
    own: the edge passes through its interior. Candidates come from the triangles' R-tree
    (one bounding-box query per edge), so the cost grows as n log n; coplanar overlaps
    are not seen."""
    edges = mesh.edges_unique
    start, end = mesh.vertices[edges[:, 0]], mesh.vertices[edges[:, 1]]
    ids, counts = mesh.triangles_tree.intersection_v(np.minimum(start, end),
                                                     np.maximum(start, end))
    edge = np.repeat(np.arange(len(edges)), np.asarray(counts, dtype=np.int64))
    triangle = np.asarray(ids, dtype=np.int64)
    corners = mesh.faces[triangle]
    shared = ((corners == edges[edge, :1]) | (corners == edges[edge, 1:])).any(axis=1)
    edge, triangle = edge[~shared], triangle[~shared]
    if edge.size == 0:
        return 0
    # Moller-Trumbore for segments: strictly between the edge's ends, on the triangle or its
    # border (in a sound surface an edge meets only the triangles around its two ends).
    a, b, c = (mesh.triangles[triangle, k] for k in range(3))
    origin, direction = start[edge], end[edge] - start[edge]
    side1, side2 = b - a, c - a
    normal_ish = np.cross(direction, side2)
    determinant = np.einsum("ij,ij->i", side1, normal_ish)
    scale = np.linalg.norm(side1, axis=1) * np.linalg.norm(normal_ish, axis=1)
    valid = np.abs(determinant) > 1e-12 * scale
    inverse = np.divide(1.0, determinant, out=np.zeros_like(determinant), where=valid)
    offset = origin - a
    u = np.einsum("ij,ij->i", offset, normal_ish) * inverse
    across = np.cross(offset, side1)
    v = np.einsum("ij,ij->i", direction, across) * inverse
    t = np.einsum("ij,ij->i", side2, across) * inverse
    eps = 1e-9
    cut = valid & (u > -eps) & (v > -eps) & (u + v < 1 + eps) & (t > eps) & (t < 1 - eps)
    return int(np.count_nonzero(cut))


def level_and_owner(bodies, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The level set of the union of ``bodies`` at ``points`` and which body is nearest."""
    levels = np.stack([body.level(points) for body in bodies])
    owner = np.argmin(levels, axis=0)
    return levels[owner, np.arange(len(points))], owner


def body_velocity(bodies, owner: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Velocity at ``points`` of the body each belongs to (``owner``)."""
    velocity = np.zeros_like(points)
    for index, body in enumerate(bodies):
        mine = owner == index
        if mine.any():
            velocity[mine] = body.velocity(points[mine])
    return velocity


# -- forcing on a grid ----------------------------------------------------------------------


@dataclass(frozen=True)
class ComponentPoints:
    """Where one velocity component lives on a rank's ghosted piece.

    ``points``: Cartesian coordinates, an array of shape ``(*ghosted, 3)``; ``steps``: for
    each axis, the distance from each point to its neighbour one index up along it
    (broadcastable to the ghosted shape); ``direction``: the unit vector of the component
    at each point (shape ``(*ghosted, 3)``); ``scale``: the stored value per unit velocity
    (``r`` for ``q = r u_r``, else 1); ``volume``: the control volume of each point.
    """

    points: np.ndarray
    steps: tuple[np.ndarray, np.ndarray, np.ndarray]
    direction: np.ndarray
    scale: np.ndarray | float
    volume: np.ndarray


@dataclass
class ForcingStencil:
    """The forcing of one component on one rank (flat indices into its ghosted array)."""

    inside: np.ndarray
    inside_values: np.ndarray
    targets: np.ndarray
    neighbours: np.ndarray
    weights: np.ndarray  # of the neighbour's value
    wall_terms: np.ndarray  # (1 - weight) * the body's value at the surface crossing
    loads: np.ndarray = field(repr=False)  # (points, 6): force and moment per unit change
    owners: np.ndarray = field(repr=False)  # the body of each point
    solid: np.ndarray = field(repr=False)  # every ghosted point inside a body, ghosts too
    inside_points: np.ndarray = field(repr=False)  # (inside, 3): where they are
    inside_units: np.ndarray = field(repr=False)  # (inside, 3): stored value per velocity
    wall_points: np.ndarray = field(repr=False)  # (targets, 3): the surface crossings
    wall_units: np.ndarray = field(repr=False)  # (targets, 3)
    bodies: int = 1

    @property
    def points(self) -> int:
        """Forcing and inside points of this stencil."""
        return len(self.inside) + len(self.targets)

    def held_momentum(self, bodies) -> np.ndarray:
        """The momentum of the inside points moving with ``bodies`` (those of the stencil,
        placed at any time), per body, shape (bodies, 6): as :meth:`apply`'s load, of each
        body's own volume."""
        count = len(self.inside)
        owners = self.owners[:count]
        velocity = body_velocity(bodies, owners, self.inside_points)
        values = np.einsum("ij,ij->i", velocity, self.inside_units)
        load = np.zeros((self.bodies, 6))
        np.add.at(load, owners, values[:, None] * self.loads[:count])
        return load

    def impose_velocity(self, bodies) -> None:
        """Impose the velocities of ``bodies`` (those of the stencil, placed at another
        time, in the same place to within the step) from now on."""
        velocity = body_velocity(bodies, self.owners[: len(self.inside)], self.inside_points)
        self.inside_values = np.einsum("ij,ij->i", velocity, self.inside_units)
        velocity = body_velocity(bodies, self.owners[len(self.inside) :], self.wall_points)
        self.wall_terms = (1.0 - self.weights) * np.einsum("ij,ij->i", velocity, self.wall_units)

    def apply(self, values: np.ndarray) -> np.ndarray:
        """Impose the bodies on ``values`` (a ghosted array, in place); return the load of
        the change per body, shape (bodies, 6): force (3) and moment about the origin (3)
        added to the fluid, times Δt."""
        flat = values.reshape(-1)
        before = np.concatenate([flat[self.inside], flat[self.targets]])
        forced = self.weights * flat[self.neighbours] + self.wall_terms
        flat[self.inside] = self.inside_values
        flat[self.targets] = forced
        change = np.concatenate([self.inside_values, forced]) - before
        load = np.zeros((self.bodies, 6))
        np.add.at(load, self.owners, change[:, None] * self.loads)
        return load


def forcing_stencil(bodies, geometry: ComponentPoints) -> ForcingStencil:
    """Build the forcing of ``bodies`` on one component's owned points (not the outer
    ghost layer), from the level set on the ghosted piece."""
    shape = geometry.points.shape[:-1]
    points = geometry.points.reshape(-1, 3)
    level, owner = level_and_owner(bodies, points)
    level = level.reshape(shape)
    owned = np.zeros(shape, dtype=bool)
    owned[1:-1, 1:-1, 1:-1] = True
    direction = geometry.direction.reshape(-1, 3)
    scale = np.broadcast_to(geometry.scale, shape).reshape(-1)
    volume = np.broadcast_to(geometry.volume, shape).reshape(-1)

    def component(where: np.ndarray, velocity_points: np.ndarray, owners) -> np.ndarray:
        velocity = body_velocity(bodies, owners, velocity_points)
        return scale[where] * np.einsum("ij,ij->i", velocity, direction[where])

    inside = np.flatnonzero(owned & (level < 0))
    inside_values = component(inside, points[inside], owner[inside])

    # Forcing points: owned, in the fluid, a neighbour inside along some axis. Along each
    # axis and side, the crossing's fraction of the step and the slope of the level set.
    candidates = owned & (level >= 0)
    best_slope = np.zeros(shape)
    chosen = np.full(shape, -1)
    for axis in range(3):
        step = np.broadcast_to(geometry.steps[axis], shape)
        for side, shift in enumerate((1, -1)):
            neighbour_level = np.roll(level, -shift, axis=axis)
            distance = step if shift == 1 else np.roll(step, 1, axis=axis)
            with np.errstate(divide="ignore", invalid="ignore"):  # r Δθ = 0 on the axis
                slope = (level - neighbour_level) / distance
            better = candidates & (neighbour_level < 0) & (slope > best_slope)
            best_slope[better] = slope[better]
            chosen[better] = 2 * axis + side
    targets = np.flatnonzero(chosen >= 0)
    neighbours, weights, walls = [], [], []
    strides = np.array([shape[1] * shape[2], shape[2], 1])
    for target in targets:
        index = np.unravel_index(target, shape)
        axis, side = divmod(int(chosen[index]), 2)
        shift = 1 if side == 0 else -1
        inward = target + shift * strides[axis]  # the neighbour inside
        outward = target - shift * strides[axis]  # the next point out
        steps = np.broadcast_to(geometry.steps[axis], shape).reshape(-1)
        h_in = steps[target] if shift == 1 else steps[inward]
        h_out = steps[outward] if shift == 1 else steps[target]
        fraction = level.flat[target] / (level.flat[target] - level.flat[inward])
        crossing = points[target] + fraction * (points[inward] - points[target])
        if level.flat[outward] < 0:  # a body thinner than two cells: no fluid point out
            weight = 0.0
        else:
            weight = fraction * h_in / (h_out + fraction * h_in)
        neighbours.append(outward)
        weights.append(weight)
        walls.append(crossing)
    walls = np.reshape(walls, (-1, 3))
    weights = np.asarray(weights, dtype=float)
    wall_owners = level_and_owner(bodies, walls)[1]
    wall_values = component(targets, walls, wall_owners)
    every = np.concatenate([inside, targets])
    arm = points[every]
    unit = direction[every] * (volume[every] / scale[every])[:, None]
    loads = np.concatenate([unit, np.cross(arm, unit)], axis=1)
    return ForcingStencil(
        inside=inside,
        inside_values=inside_values,
        targets=targets,
        neighbours=np.asarray(neighbours, dtype=np.intp),
        weights=weights,
        wall_terms=(1.0 - weights) * wall_values,
        loads=loads,
        owners=np.concatenate([owner[inside], wall_owners]).astype(np.intp),
        solid=np.flatnonzero(level < 0),
        inside_points=points[inside],
        inside_units=direction[inside] * scale[inside][:, None],
        wall_points=walls,
        wall_units=direction[targets] * scale[targets][:, None],
        bodies=len(bodies),
    )


def wall_traction(near, far, normals, rigid_near, rigid_far, viscosity: float, distance: float):
    """The fluid's force per unit area on a body's surface panels (density 1), from the flow
    ``[u, v, w, p]`` sampled at two probe points ``distance`` and ``2 distance`` out along
    each panel's unit outward ``normals``: the wall pressure extrapolated linearly, ``2 p1 -
    p2``, and the wall shear ``ν ∂u_t/∂n`` of the flow relative to the body's rigid motion
    (``rigid_near``, ``rigid_far``: the body's velocity field at the probes; a rigid motion
    has no strain), from the parabola through zero at the wall and the two probes' relative
    tangential velocities, ``(4 s1 - s2) / (2 distance)``: both second order in
    ``distance``.

    Returns an ``(n, 3)`` array: ``-p_wall n + ν ∂u_t/∂n``.
    """
    near, far = np.asarray(near, dtype=float), np.asarray(far, dtype=float)
    normals = np.asarray(normals, dtype=float)

    def tangential_slip(flow, rigid):
        slip = flow[:, :3] - np.asarray(rigid, dtype=float)
        return slip - np.einsum("ni,ni->n", slip, normals)[:, None] * normals

    pressure = 2.0 * near[:, 3:4] - far[:, 3:4]
    shear = (4.0 * tangential_slip(near, rigid_near) - tangential_slip(far, rigid_far)) / (
        2.0 * distance
    )
    return -pressure * normals + viscosity * shear

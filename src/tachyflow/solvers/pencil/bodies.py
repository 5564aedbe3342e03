"""Immersed bodies of a case (``[[immersed.body]]``), built by shapes registered by name,
moving by motions registered by name.

A shape is a :class:`BodyShape` subclass with a ``name`` and :meth:`BodyShape.build`,
registered with :func:`register` (a plug-in may add its own, e.g. a parametric blade row).
A motion is a :class:`BodyMotion` subclass registered with :func:`register_motion`:
``rigid`` (at rest or turning steadily) and ``oscillation``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

from tachyflow.errors import ConfigError
from tachyflow.numerics import immersed
from tachyflow.registry import Registry


class BodyShape:
    """Builds a :class:`~tachyflow.numerics.immersed.Body` from its case table."""

    name: ClassVar[str]
    #: Whether the body is a rotor (the solver then offers ``rotor()``: blade count,
    #: rotation, sectors, surfaces; the ``rotor`` capability).
    rotor: ClassVar[bool] = False
    #: Whether its section across ``axis`` is a circle of ``radius`` about ``centre``.
    circular: ClassVar[bool] = False

    @classmethod
    def build(cls, section, config, folder: Path) -> immersed.Body:
        """The body of ``section`` (a ``BodySection``) of ``config``; ``folder``: the case
        file's (for relative paths)."""
        raise NotImplementedError

    @classmethod
    def check(cls, section, config, require) -> None:
        """Checks of the shape across the case's values, when the case is read
        (``require(condition, key, expectation, value)``); none by default."""

    @classmethod
    def surface(cls, section, body, config):
        """A closed triangulated surface (trimesh) of the built ``body``, for its surface
        loads; ValueError naming why when the shape makes none."""
        raise ValueError(f"a {section.shape!r} body makes no surface")


SPHERE_SUBDIVISIONS = 4  # a sphere's surface for its loads: an icosphere of 5,120 triangles
CYLINDER_SECTIONS = 256
_SHAPES = Registry("body shape", BodyShape)
register = _SHAPES.add


def shapes() -> list[str]:
    """The registered shape names."""
    return sorted(_SHAPES.classes())


def shape_class(name: str) -> type[BodyShape]:
    """The shape registered as ``name``."""
    return _SHAPES[name]


class BodyMotion:
    """Builds a body's motion (:class:`~tachyflow.numerics.immersed.RigidMotion` or
    :class:`~tachyflow.numerics.immersed.OscillatingMotion`) from its case table."""

    name: ClassVar[str]

    @classmethod
    def build(cls, section):
        """The motion of ``section`` (a ``BodySection``)."""
        raise NotImplementedError


_MOTIONS = Registry("body motion", BodyMotion)
register_motion = _MOTIONS.add


def motions() -> list[str]:
    """The registered motion names."""
    return sorted(_MOTIONS.classes())


@register_motion
class RigidBodyMotion(BodyMotion):
    """``motion = "rigid"``: at rest, or turning at ``angular_velocity`` about
    ``rotation_axis`` through ``rotation_centre``."""

    name = "rigid"

    @classmethod
    def build(cls, section):
        return immersed.RigidMotion(
            section.rotation_centre, section.rotation_axis, section.angular_velocity
        )


@register_motion
class OscillationMotion(BodyMotion):
    """``motion = "oscillation"``: translation by ``oscillation`` and pitching by ``pitch``
    (degrees; ``pitch_phase`` ahead) about ``pitch_axis`` through ``rotation_centre``, at
    ``frequency``."""

    name = "oscillation"

    @classmethod
    def build(cls, section):
        return immersed.OscillatingMotion(
            section.rotation_centre,
            section.oscillation,
            math.radians(section.pitch),
            section.pitch_axis,
            section.frequency,
            math.radians(section.pitch_phase),
        )


def _motion(section):
    return _MOTIONS[section.motion].build(section)


@register
class SphereShape(BodyShape):
    """``shape = "sphere"``: ``centre``, ``radius``."""

    name = "sphere"

    @classmethod
    def surface(cls, section, body, config):
        import numpy as np
        import trimesh

        mesh = trimesh.creation.icosphere(SPHERE_SUBDIVISIONS, radius=section.radius)
        mesh.apply_translation(np.asarray(section.centre, dtype=float))
        return mesh

    @classmethod
    def build(cls, section, config, folder):
        return immersed.Sphere(section.centre, section.radius, motion=_motion(section))


@register
class SlabShape(BodyShape):
    """``shape = "slab"``: ``centre``, ``thickness`` across the plane normal to ``axis``
    (unbounded: across a periodic box, a plate)."""

    name = "slab"

    @classmethod
    def build(cls, section, config, folder):
        return immersed.Slab(section.centre, section.thickness, section.axis, _motion(section))


@register
class CylinderShape(BodyShape):
    """``shape = "cylinder"``: ``centre``, ``radius``, ``axis``, ``hollow``."""

    name = "cylinder"
    circular = True

    @classmethod
    def surface(cls, section, body, config):
        import numpy as np

        from tachyflow.solvers.pencil.surface_loads import cylinder_side

        if section.hollow or not np.allclose(np.abs(section.axis), (0.0, 0.0, 1.0)):
            raise ValueError("a surface is made for solid cylinders along z, not a "
                             f"{'hollow ' if section.hollow else ''}one along {section.axis}")
        span = float(config.grid.lengths[2])
        centre = (section.centre[0], section.centre[1], 0.5 * span)
        return cylinder_side(centre, section.radius, span, CYLINDER_SECTIONS)

    @classmethod
    def build(cls, section, config, folder):
        return immersed.CircularCylinder(
            section.centre, section.radius, section.axis, _motion(section), section.hollow
        )


@register
class SurfaceShape(BodyShape):
    """``shape = "surface"``: a closed triangulated ``file`` (relative to the case file),
    ``scale``, ``offset``."""

    name = "surface"

    @classmethod
    def surface(cls, section, body, config):
        return body.mesh

    @classmethod
    def build(cls, section, config, folder):
        """The surface of ``file`` checked for an inside (see
        :class:`~tachyflow.numerics.immersed.TriangulatedBody`: an inside-out one is turned
        with a warning) and against the domain (:func:`_check_placement`); ConfigError
        naming the body, the file and the defect."""
        path = Path(section.file)
        path = path if path.is_absolute() else folder / path
        if not path.is_file():
            raise ConfigError(f"immersed.body '{section.name}': no surface file {str(path)!r}")
        try:
            body = immersed.TriangulatedBody(
                str(path), section.scale, section.offset, _motion(section)
            )
            _check_placement(body, config, str(path))
        except ValueError as error:
            raise ConfigError(f"immersed.body '{section.name}': {error}") from None
        return body


def _check_placement(body, config, name: str) -> None:
    """ValueError naming ``name`` when the triangulated ``body`` lies outside the case's
    domain, is less than a cell across along an axis the grid resolves it on, or encloses
    the whole domain (no fluid). Cartesian domain: the box [0, L]; cylindrical: x along
    its length and a body further from the axis than the outer radius."""
    import numpy as np

    lower, upper = body.mesh.bounds
    if config.case.solver == "cylindrical":
        cylinder = config.cylinder
        # The nearest the body's bounding box comes to the x axis.
        gap = np.hypot(max(0.0, lower[1], -upper[1]), max(0.0, lower[2], -upper[2]))
        if upper[0] <= 0 or lower[0] >= cylinder.length or gap >= cylinder.radius:
            raise ValueError(f"surface {name!r} lies outside the domain (0 <= x <= "
                             f"{cylinder.length:g}, r <= {cylinder.radius:g}): its bounds "
                             f"are {lower.round(6).tolist()} to {upper.round(6).tolist()}")
        faces = {"x": np.linspace(0.0, cylinder.length, config.grid.cells[0] + 1)}
        sector = 2 * np.pi / cylinder.sectors
        x, theta = np.meshgrid([0.0, cylinder.length], [0.0, 0.5 * sector, sector])
        radius = np.full(x.size, float(cylinder.radius))
        probes = np.column_stack([x.ravel(), radius * np.cos(theta.ravel()),
                                  radius * np.sin(theta.ravel())])
        middle = 0.5 * (cylinder.radius + cylinder.inner_radius)
        probes = np.vstack([probes, [0.5 * cylinder.length, middle * np.cos(0.5 * sector),
                                     middle * np.sin(0.5 * sector)]])
    else:
        from tachyflow.numerics.grid import StaggeredGrid

        grid = StaggeredGrid.from_section(config.grid)
        lengths = np.asarray(grid.lengths, dtype=float)
        if np.any(upper <= 0) or np.any(lower >= lengths):
            raise ValueError(f"surface {name!r} lies outside the domain [0, "
                             f"{lengths.tolist()}]: its bounds are "
                             f"{lower.round(6).tolist()} to {upper.round(6).tolist()}")
        faces = {
            "x": grid.faces_x,
            "y": grid.faces_y,
            "z": np.linspace(0.0, lengths[2], grid.shape[2] + 1),
        }
        corners = np.array(np.meshgrid(*[[0.0, length] for length in lengths]))
        probes = np.vstack([corners.reshape(3, -1).T, 0.5 * lengths])
    for axis, (name_of_axis, edges) in enumerate(faces.items()):
        # The cells the body's extent overlaps, the widest of them (a stretched y).
        first = max(np.searchsorted(edges, lower[axis], side="right") - 1, 0)
        last = min(np.searchsorted(edges, upper[axis], side="left"), len(edges) - 1)
        width = float(np.diff(edges[first:last + 1]).max(initial=0.0))
        across = float(upper[axis] - lower[axis])
        if across < width:
            raise ValueError(f"surface {name!r} is {across:.3g} across in {name_of_axis}, "
                             f"less than a cell there ({width:.3g}): the grid cannot "
                             "resolve it")
    if np.all(body.level(probes) < 0):
        raise ValueError(f"surface {name!r} encloses the whole domain (its corners and "
                         "centre are inside it): no fluid is left")


def from_case(config) -> list[immersed.Body]:
    """The bodies of a case, in its order."""
    source = Path(config.source)
    folder = source.parent if source.is_file() else Path.cwd()
    return [_SHAPES[body.shape].build(body, config, folder) for body in config.immersed.body]


def rotor_of(config):
    """The :class:`~tachyflow.solvers.base.Rotor` of a case's rotor body, else None."""
    from tachyflow.solvers.base import Rotor

    for index, body in enumerate(config.immersed.body):
        if _SHAPES[body.shape].rotor:
            fan, cylinder = config.fan, config.cylinder
            return Rotor(
                body=index, blades=fan.blades, sectors=cylinder.sectors,
                rotation=cylinder.rotation, radius=cylinder.radius,
                hub_radius=cylinder.inner_radius, pressure_planes=fan.pressure_planes,
                inflow_velocity=config.grid.inflow_velocity, density=fan.density,
                units=fan.units,
            )
    return None


def _check_rotor(config, require) -> None:
    """The checks every rotor shape shares: a hub, whole blades per sector, a tip gap
    inside the annulus, an open x and the pressure planes about the rotor."""
    fan, cylinder = config.fan, config.cylinder
    require(cylinder.inner_radius > 0, "cylinder.inner_radius", "> 0 (the fan's hub)",
            cylinder.inner_radius)
    require(fan.blades >= 1 and fan.blades % cylinder.sectors == 0, "fan.blades",
            f"a positive multiple of cylinder.sectors = {cylinder.sectors}", fan.blades)
    require(0 <= fan.tip_clearance < cylinder.radius - cylinder.inner_radius,
            "fan.tip_clearance", "in [0, radius - inner_radius)", fan.tip_clearance)
    require(config.grid.x_boundaries == "inflow-outflow", "grid.x_boundaries",
            '"inflow-outflow" with a fan', config.grid.x_boundaries)
    for key in ("position", "pressure_planes"):
        values = getattr(fan, key)
        values = values if isinstance(values, tuple) else (values,)
        require(all(0 < value < cylinder.length for value in values), f"fan.{key}",
                f"inside (0, cylinder.length = {cylinder.length})", getattr(fan, key))
    require(fan.pressure_planes[0] < fan.position < fan.pressure_planes[1],
            "fan.pressure_planes", "one plane up- and one downstream of fan.position = "
            f"{fan.position}", fan.pressure_planes)


@register
class FanRotorShape(BodyShape):
    """``shape = "fan-rotor"``: the blades of ``[fan]`` that lie in the computed sector
    (``[fan] blades / [cylinder] sectors`` of them), at rest in the frame turning with
    ``[cylinder] rotation``, their roots sunk into the hub by a tenth of its radius."""

    name = "fan-rotor"
    rotor = True

    @classmethod
    def check(cls, section, config, require) -> None:
        from tachyflow.numerics.blades import SECTIONS

        fan = config.fan
        require(fan.section in SECTIONS, "fan.section", f"one of {sorted(SECTIONS)}",
                fan.section)
        _check_rotor(config, require)

    @classmethod
    def build(cls, section, config, folder):
        import numpy as np
        import trimesh

        from tachyflow.numerics.blades import BladeDesign

        fan, cylinder = config.fan, config.cylinder
        pitch = 2 * np.pi / fan.blades
        try:
            designs = [
                BladeDesign(
                    root_radius=0.9 * cylinder.inner_radius,
                    tip_radius=cylinder.radius - fan.tip_clearance,
                    chord=fan.chord,
                    stagger=fan.stagger,
                    camber=fan.camber,
                    camber_position=fan.camber_position,
                    section=fan.section,
                    design_lift=fan.design_lift,
                    thickness=fan.thickness,
                    sweep=fan.sweep,
                    centre=fan.position,
                    angle=(blade + 0.5) * pitch,
                    hand=-1 if cylinder.rotation > 0 else 1,
                    stations=fan.stations,
                    points=fan.points,
                )
                for blade in range(fan.blades // cylinder.sectors)
            ]
            surface = trimesh.util.concatenate([design.surface() for design in designs])
        except ValueError as error:
            raise ConfigError(f"[fan]: {error}") from None
        # The stacked blades are closed by their own builder; the edge test flags 15 edges
        # of the naca65 rotor, not yet examined (issue 45's note): not applied to them.
        return immersed.TriangulatedBody(surface, crossings=False)


@register
class DesignedRotorShape(BodyShape):
    """``shape = "designed-rotor"``: blades designed from the duty point of
    ``[fan_design]`` by the blade-element method
    (:class:`~tachyflow.numerics.fan_design.FanSpecification`, as ``tachyflow fan design``),
    for the case's speed (``[cylinder] rotation``), hub (``inner_radius``), tip radius
    (``radius - [fan] tip_clearance``), blade count, density (``[fan]``) and viscosity; a
    dimensional case (``[fan] units = "SI"``). Each blade's quarter chords lie at x =
    ``[fan] position``, the blade centred in θ in its pitch, its root section carried on
    into the hub (to 0.9 of its radius) so that no gap opens there; the blades turn with
    the frame's sense of rotation."""

    name = "designed-rotor"
    rotor = True

    @classmethod
    def check(cls, section, config, require) -> None:
        fan, cylinder = config.fan, config.cylinder
        require(fan.units == "SI", "fan.units",
                '"SI" with a designed rotor (its duty point is in m³/s and Pa)', fan.units)
        require(cylinder.rotation != 0, "cylinder.rotation",
                "non-zero with a designed rotor (its speed)", cylinder.rotation)
        _check_rotor(config, require)

    @classmethod
    def specification(cls, config):
        """The :class:`~tachyflow.numerics.fan_design.FanSpecification` of the case."""
        from tachyflow.numerics.fan_design import FanSpecification

        fan, cylinder, duty = config.fan, config.cylinder, config.fan_design
        return FanSpecification(
            flow_rate=duty.flow_rate, pressure_rise=duty.pressure_rise,
            speed=abs(cylinder.rotation) * 30 / math.pi,
            tip_diameter=2 * (cylinder.radius - fan.tip_clearance),
            hub_diameter=2 * cylinder.inner_radius, blades=fan.blades, section=duty.section,
            angles_of_attack=tuple(duty.angles_of_attack), density=fan.density,
            volumetric_efficiency=duty.volumetric_efficiency,
            hydraulic_efficiency=duty.hydraulic_efficiency, glide_ratio=duty.glide_ratio,
            kinematic_viscosity=config.flow.viscosity,
        )

    @classmethod
    def build(cls, section, config, folder):
        import numpy as np
        import trimesh

        from tachyflow.numerics.fan_design import BladeSections

        fan, cylinder = config.fan, config.cylinder
        try:
            design = cls.specification(config).design()
            table = design.table()
            # The root section again inside the hub: the hub's wall cuts the blade there.
            columns = {name: np.concatenate([values[:1], values])
                       for name, values in table.items()}
            columns["r"][0] = 0.9 * cylinder.inner_radius
            blade = BladeSections.from_columns(columns, design.camber_position,
                                               config.fan_design.points).blade()
        except ValueError as error:
            raise ConfigError(f"[fan_design]: {error}") from None
        if cylinder.rotation > 0:  # designed turning towards -θ: mirrored in z
            blade.apply_transform(np.diag([1.0, 1.0, -1.0, 1.0]))
        theta = np.arctan2(blade.vertices[:, 2], blade.vertices[:, 1])
        pitch = 2 * math.pi / fan.blades
        span = float(theta.max() - theta.min())
        if span >= pitch:
            raise ConfigError(
                f"[fan_design]: a blade spans {math.degrees(span):.1f}° about the axis, more "
                f"than its pitch {math.degrees(pitch):.1f}° ({fan.blades} blades): the "
                "computed sector cannot hold it whole")
        middle = 0.5 * float(theta.max() + theta.min())
        blade.apply_translation((fan.position, 0.0, 0.0))
        blades = []
        for index in range(fan.blades // cylinder.sectors):
            copy = blade.copy()
            copy.apply_transform(trimesh.transformations.rotation_matrix(
                (index + 0.5) * pitch - middle, (1.0, 0.0, 0.0)))
            blades.append(copy)
        return immersed.TriangulatedBody(trimesh.util.concatenate(blades))

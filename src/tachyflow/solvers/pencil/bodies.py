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

    @classmethod
    def build(cls, section, config, folder: Path) -> immersed.Body:
        """The body of ``section`` (a ``BodySection``) of ``config``; ``folder``: the case
        file's (for relative paths)."""
        raise NotImplementedError


_SHAPES = Registry("body shape", BodyShape)
register = _SHAPES.add


def shapes() -> list[str]:
    """The registered shape names."""
    return sorted(_SHAPES.classes())


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
    def build(cls, section, config, folder):
        path = Path(section.file)
        path = path if path.is_absolute() else folder / path
        if not path.is_file():
            raise ConfigError(f"immersed.body '{section.name}': no surface file {str(path)!r}")
        try:
            return immersed.TriangulatedBody(path, section.scale, section.offset, _motion(section))
        except ValueError as error:
            raise ConfigError(f"immersed.body '{section.name}': {error}") from None


def from_case(config) -> list[immersed.Body]:
    """The bodies of a case, in its order."""
    source = Path(config.source)
    folder = source.parent if source.is_file() else Path.cwd()
    return [_SHAPES[body.shape].build(body, config, folder) for body in config.immersed.body]


@register
class FanRotorShape(BodyShape):
    """``shape = "fan-rotor"``: the blades of ``[fan]`` that lie in the computed sector
    (``[fan] blades / [cylinder] sectors`` of them), at rest in the frame turning with
    ``[cylinder] rotation``, their roots sunk into the hub by a tenth of its radius."""

    name = "fan-rotor"

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
        return immersed.TriangulatedBody(surface)

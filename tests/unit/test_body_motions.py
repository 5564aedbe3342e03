"""Prescribed body motions: the kinematics of an oscillation (translation and pitching),
bodies placed where their motion has them, and the case tables that build them."""

import math

import numpy as np
import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics import immersed
from tachyflow.solvers.pencil import bodies

MOTION = immersed.OscillatingMotion(
    centre=(0.3, -0.2, 0.1),
    translation=(0.2, 0.1, -0.05),
    pitch=0.4,
    pitch_axis=(0.0, 1.0, 1.0),
    frequency=1.5,
    pitch_phase=0.7,
)


def test_an_oscillation_moves_body_points_rigidly_at_its_velocity():
    rest = np.random.default_rng(1).uniform(-1, 1, (50, 3))
    for time in (0.0, 0.13, 0.61):
        now = MOTION.position(rest, time)
        assert np.allclose(MOTION.body_frame(now, time), rest, atol=1e-14)
        # Rigid: distances between body points are kept.
        assert np.allclose(np.linalg.norm(now[1:] - now[:-1], axis=1),
                           np.linalg.norm(rest[1:] - rest[:-1], axis=1), atol=1e-14)
        # The velocity at the points is the rate of change of their positions.
        step = 1e-6
        rate = (MOTION.position(rest, time + step) - MOTION.position(rest, time - step)) / (
            2 * step
        )
        assert np.allclose(MOTION.velocity(now, time), rate, rtol=1e-7, atol=1e-8)
    # One period later everything is back.
    assert np.allclose(MOTION.position(rest, 0.13 + 1 / 1.5), MOTION.position(rest, 0.13))


def test_a_placed_body_is_the_body_carried_by_its_motion():
    translation = immersed.OscillatingMotion((0, 0, 0), (0.25, 0, 0), frequency=2.0)
    sphere = immersed.Sphere((0.0, 0.0, 0.0), 0.5, motion=translation)
    points = np.random.default_rng(2).uniform(-1, 1, (200, 3))
    time = 0.1
    moved = sphere.placed(time)
    shift = 0.25 * math.sin(2 * math.pi * 2.0 * time)
    assert np.allclose(moved.level(points), immersed.Sphere((shift, 0, 0), 0.5).level(points))
    expected = 0.25 * 4 * math.pi * math.cos(4 * math.pi * time)
    assert np.allclose(moved.velocity(points), [expected, 0, 0])
    assert moved.placed(0.3).time == 0.3  # placed again from the body at rest
    with pytest.raises(ValueError, match=r"Sphere moves: its velocity is that of \.placed"):
        sphere.velocity(points)  # not placed: no time, no velocity
    still = immersed.Sphere((0, 0, 0), 0.5, motion=immersed.RigidMotion(angular_velocity=1.0))
    assert still.placed(0.7) is still  # a steady rotation leaves the level set in place
    slab = immersed.Slab((0, 0.5, 0), 0.2, (0, 2, 0))
    assert np.allclose(slab.level(np.array([[3.0, 0.5, 1.0], [0.0, 0.9, 0.0]])), [-0.1, 0.3])


def test_bad_oscillations_are_refused():
    with pytest.raises(ValueError, match="frequency must be a positive number"):
        immersed.OscillatingMotion(frequency=0.0)
    with pytest.raises(ValueError, match="translation must be a finite 3-vector"):
        immersed.OscillatingMotion(translation=(1.0, 0.0))
    with pytest.raises(ValueError, match="axis must be a nonzero 3-vector"):
        immersed.OscillatingMotion(pitch_axis=(0, 0, 0))
    with pytest.raises(ValueError, match="thickness must be a positive number"):
        immersed.Slab((0, 0, 0), 0.0)


CASE = """
[case]
solver = "{solver}"
[grid]
cells = [8, 8, 1]
[flow]
viscosity = 0.1
[[immersed.body]]
name = "plate"
shape = "slab"
centre = [0.5, 0.5, 0.0]
thickness = 0.2
axis = [0.0, 1.0, 0.0]
rotation_centre = [0.5, 0.5, 0.0]
motion = "{motion}"
oscillation = [0.1, 0.05, 0.0]
pitch = 10.0
pitch_phase = 90.0
frequency = {frequency}
"""


def test_a_case_builds_an_oscillating_body():
    case = config.parse(CASE.format(solver="incompressible", motion="oscillation",
                                    frequency=2.0), "plate.toml")
    (plate,) = bodies.from_case(case)
    assert isinstance(plate, immersed.Slab)
    assert plate.motion == immersed.OscillatingMotion(
        (0.5, 0.5, 0.0), (0.1, 0.05, 0.0), math.radians(10.0), (0, 0, 1), 2.0, math.pi / 2
    )
    assert bodies.motions() == ["oscillation", "rigid"]


@pytest.mark.parametrize(
    "solver, motion, frequency, message",
    [
        ("incompressible", "wobble", 1.0,
         "'immersed.body 'plate' motion' must be one of ['oscillation', 'rigid'], got 'wobble'"),
        ("incompressible", "oscillation", 0.0,
         "'immersed.body 'plate' frequency' must be > 0 with an oscillation, got 0.0"),
        ("cylindrical", "oscillation", 1.0,
         "'immersed.body 'plate' motion' must be 'rigid' with the cylindrical solver"),
    ],
)
def test_a_bad_motion_is_named(solver, motion, frequency, message):
    text = CASE.format(solver=solver, motion=motion, frequency=frequency)
    with pytest.raises(ConfigError) as error:
        config.parse(text, "plate.toml")
    assert message in str(error.value)

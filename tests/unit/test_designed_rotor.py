"""``shape = "designed-rotor"``: a fan case's blades designed from its ``[fan_design]`` duty
point (issue 44): the built body is the blade of ``tachyflow fan design`` for the case's
speed, diameters and blade count, whole inside its pitch, mirrored for the other sense of
rotation; a case that cannot be designed is refused naming the key."""

import math
from importlib import resources

import numpy as np
import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics.fan_design import FanSpecification
from tachyflow.solvers.pencil import bodies

trimesh = pytest.importorskip("trimesh")


def fau(*changes):
    text = (resources.files("tachyflow") / "cases" / "fan-fau.toml").read_text()
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return config.parse(text, "fan-fau.toml")


def polar(mesh):
    theta = np.arctan2(mesh.vertices[:, 2], mesh.vertices[:, 1])
    radius = np.hypot(mesh.vertices[:, 1], mesh.vertices[:, 2])
    return theta, radius


def test_the_fau_case_builds_the_designed_blade_inside_its_passage():
    case = fau()
    (body,) = bodies.from_case(case)
    mesh = body.mesh
    assert mesh.is_watertight and mesh.volume > 0
    design = FanSpecification(speed=1486.0, kinematic_viscosity=1.5e-5).design()
    blade = design.sections().blade()
    # The same blade, carried on into the hub: the part above the hub is the design's.
    assert mesh.volume > blade.volume
    theta, radius = polar(mesh)
    pitch = 2 * math.pi / 9
    assert 0 < theta.min() and theta.max() < pitch  # whole inside the computed sector
    assert abs(0.5 * (theta.min() + theta.max()) - 0.5 * pitch) < 1e-12  # centred
    assert radius.max() == pytest.approx(0.2475, abs=1e-9)  # the tip gap: 2.5 mm
    assert radius.min() < 0.12375  # into the hub
    x = mesh.vertices[:, 0]
    # Quarter chords at x = 0.35: the hub section reaches 1/4 of its axial extent ahead.
    hub = design.table()
    extent = hub["chord"][0] * math.sin(math.radians(hub["stagger"][0]))
    assert x.min() == pytest.approx(0.35 - 0.25 * extent, rel=0.02)
    assert x.max() == pytest.approx(0.35 + 0.75 * extent, rel=0.02)


def test_the_other_sense_of_rotation_mirrors_the_blade():
    turning = bodies.from_case(fau())[0].mesh
    (mirrored,) = bodies.from_case(fau(("wall_rotation = -155.6136", "wall_rotation = 1"),
                                      ("rotation = -155.6136", "rotation = 155.6136"),
                                      ("wall_rotation = 1", "wall_rotation = 155.6136")))
    mesh = mirrored.mesh
    assert mesh.volume == pytest.approx(turning.volume, rel=1e-12)
    pitch = 2 * math.pi / 9
    # Mirrored about the passage's middle: θ -> pitch - θ at the same x and r.
    theta, radius = polar(turning)
    image = np.column_stack([turning.vertices[:, 0], radius * np.cos(pitch - theta),
                             radius * np.sin(pitch - theta)])
    assert np.abs(np.sort(image, axis=0) - np.sort(mesh.vertices, axis=0)).max() < 1e-12


@pytest.mark.parametrize("changes, message", [
    ((('units = "SI"', 'units = "non-dimensional"'),),
     "'fan.units' must be \"SI\" with a designed rotor"),
    ((("pressure_rise = 150.0", "pressure_rise = 2000.0"),),
     "[fan_design]: pressure_rise 2000.0 Pa is out of reach at 1486"),
    ((("flow_rate = 1.4  ", "flow_rate = -1.4  "),), "'fan_design.flow_rate' must be"),
    ((("[8.0, 7.4, 6.8, 6.3, 5.9, 5.5, 5.1, 4.7, 4.3, 4.0]", "[0.0, 0.0, 0.0]"),),
     "a blade spans 102.6° about the axis, more than its pitch 40.0°"),
])
def test_a_fan_that_cannot_be_designed_is_refused_naming_why(changes, message):
    with pytest.raises(ConfigError) as error:
        bodies.from_case(fau(*changes))
    assert message in str(error.value)

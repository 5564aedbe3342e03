"""Blade-element design of a low-pressure axial fan: the FAU benchmark fan from its duty
point, analysed back to its duty point, its sections stacked into closed blades."""

import math
import re

import numpy as np
import pytest

from tachyflow.numerics.airfoils import naca4_surfaces
from tachyflow.numerics.fan_design import (
    FAU_ANGLES_OF_ATTACK,
    BladeSections,
    FanSpecification,
    naca4_zero_lift_angle,
    swirl_from_blades,
    thin_airfoil_lift,
)

trimesh = pytest.importorskip("trimesh")

FAU = FanSpecification()  # the defaults: FAN-01


def glauert_zero_lift(camber, position, points=200001):
    """α_0 = (1/π) ∫ dy_c/dx (1 - cos θ) dθ, the mean line taken from the drawn section
    (midpoints of its surfaces) and differentiated numerically."""
    upper, lower = naca4_surfaces(camber, position, 0.12, points)
    middle = 0.5 * (upper + lower)
    theta = np.arccos(1 - 2 * middle[:, 0])
    slope = np.gradient(middle[:, 1], middle[:, 0])
    integrand = slope * (1 - np.cos(theta))
    return np.sum(0.5 * (integrand[1:] + integrand[:-1]) * np.diff(theta)) / np.pi


@pytest.mark.parametrize("camber, position", [(0.02, 0.4), (0.04, 0.5), (0.06, 0.3)])
def test_the_closed_form_zero_lift_angle_is_the_thin_airfoil_integral(camber, position):
    assert naca4_zero_lift_angle(camber, position) == pytest.approx(
        glauert_zero_lift(camber, position), rel=1e-4
    )


def test_thin_airfoil_lift_of_known_sections():
    # NACA 2412: α_0 = -2.08° (the textbook thin-airfoil value); a symmetric section none.
    assert math.degrees(naca4_zero_lift_angle(0.02, 0.4)) == pytest.approx(-2.077, abs=1e-3)
    assert naca4_zero_lift_angle(0.0, 0.0) == 0.0
    assert thin_airfoil_lift(math.radians(5), 0.0, 0.0) == pytest.approx(2 * math.pi**2 / 36)
    # NACA 4510, the FAU fan's section: α_0 = -4.58°, C_L(8°) = 1.38.
    assert math.degrees(naca4_zero_lift_angle(0.04, 0.5)) == pytest.approx(-4.584, abs=1e-3)
    assert thin_airfoil_lift(math.radians(8), 0.04, 0.5) == pytest.approx(1.380, abs=1e-3)


def test_the_free_vortex_design_has_constant_r_cu_and_uniform_axial_velocity():
    design = FAU.design()
    table = design.table()
    assert np.allclose(table["r_c_u"], design.swirl_constant, rtol=1e-15, atol=0)
    assert np.all(table["c_m"] == design.axial_velocity)
    # Q/η_vol through the annulus.
    assert design.axial_velocity * FAU.annulus * 0.95 == pytest.approx(1.4, rel=1e-15)
    # The published design's swirl constant, 1.48 m²/s at its 1500 rpm (within 1 %).
    assert FanSpecification(speed=1500.0).design().swirl_constant == pytest.approx(1.48,
                                                                                   rel=0.01)


@pytest.mark.parametrize("glide_ratio", [0.0, 0.03])
def test_the_designed_rotor_analysed_back_reproduces_its_duty_point(glide_ratio):
    spec = FanSpecification(glide_ratio=glide_ratio)
    design = spec.design()
    # The swirl the sections' geometry gives (stagger, chord, camber; thin-airfoil lift)...
    swirl = swirl_from_blades(design.sections(), spec.blades, spec.speed,
                              design.axial_velocity, glide_ratio)
    np.testing.assert_allclose(swirl, design.swirl, rtol=1e-13)
    # ... gives, by Euler's equation, the same total pressure rise on every section...
    total = spec.density * spec.hydraulic_efficiency * spec.omega * design.radius * swirl
    np.testing.assert_allclose(total, design.total_pressure_rise, rtol=1e-13)
    # ... and, less the exit's axial and swirl dynamic pressure over the annulus, the
    # total-to-static pressure rise asked for.
    hub, tip = spec.hub_diameter / 2, spec.tip_diameter / 2
    constant = np.mean(design.radius * swirl)
    mean_square = 2 * math.pi * constant**2 * math.log(tip / hub) / spec.annulus
    static = (total.mean() - 0.5 * spec.density * design.axial_velocity**2
              - 0.5 * spec.density * mean_square)
    assert static == pytest.approx(spec.pressure_rise, rel=1e-12)


def test_the_blade_element_relation_balances_each_annulus():
    design = FAU.design()
    rho, z = FAU.density, FAU.blades
    lift = 0.5 * rho * design.mean_relative_velocity**2 * design.chord * design.lift_coefficient
    tangential = z * lift * np.sin(np.radians(design.beta_mean))
    momentum = rho * design.axial_velocity * 2 * np.pi * design.radius * design.swirl
    np.testing.assert_allclose(tangential, momentum, rtol=1e-13)
    np.testing.assert_allclose(design.stagger, design.beta_mean + np.array(FAU_ANGLES_OF_ATTACK),
                               rtol=1e-15)


def test_the_fau_design_is_a_sensible_low_pressure_rotor():
    design = FAU.design()
    # Chords 6 to 9.5 cm, shrinking towards the tip; staggers from the circumferential
    # direction 45° at the hub to 20° at the tip, the twist of a free vortex; solidity about
    # 1 at the hub, a third at the tip; lift coefficients 0.9-1.4 (attached NACA 4510).
    assert np.all((0.06 < design.chord) & (design.chord < 0.095))
    assert np.all(np.diff(design.chord) < 0) and np.all(np.diff(design.stagger) < 0)
    assert 44 < design.stagger[0] < 47 and 19 < design.stagger[-1] < 21
    assert 1.0 < design.solidity[0] < 1.1 and 0.3 < design.solidity[-1] < 0.4
    assert np.all((0.9 < design.lift_coefficient) & (design.lift_coefficient < 1.4))
    # The flow turned by the blade, less towards the tip; the relative flow decelerated,
    # de Haller's ratio w2/w1 from 0.57 at the hub (below the usual 0.7 on the inner half:
    # a heavily loaded hub, as free vortices at hub ratio 0.5 have) to 0.85 at the tip.
    assert np.all(design.beta_out > design.beta_in)
    turning = design.beta_out - design.beta_in
    assert np.all(np.diff(turning) < 0)
    w1 = np.hypot(design.axial_velocity, design.blade_speed)
    w2 = np.hypot(design.axial_velocity, design.blade_speed - design.swirl)
    de_haller = w2 / w1
    assert np.all(np.diff(de_haller) > 0)
    assert 0.56 < de_haller[0] < 0.58 and 0.84 < de_haller[-1] < 0.86
    assert design.blade_speed[-1] == pytest.approx(38.51, abs=0.01)  # the 38.5 m/s
    assert np.all((1e5 < design.reynolds) & (design.reynolds < 1.6e5))


def section_area(thickness, camber, position):
    upper, lower = naca4_surfaces(camber, position, thickness, 4001)
    return np.trapezoid(upper[:, 1], upper[:, 0]) - np.trapezoid(lower[:, 1], lower[:, 0])


def test_the_stacked_blade_is_closed_and_has_the_sections_volume():
    sections = FAU.design().sections()
    blade = sections.blade()
    assert blade.is_watertight and blade.is_winding_consistent and blade.volume > 0
    # The ruled surface's volume: about the sections' areas integrated along the span.
    areas = section_area(0.10, 0.04, 0.5) * sections.chord**2
    expected = np.trapezoid(areas, sections.radius)
    assert blade.volume == pytest.approx(expected, rel=0.02)
    rotor = sections.rotor(FAU.blades)
    assert rotor.is_watertight and rotor.volume == pytest.approx(9 * blade.volume, rel=1e-9)
    assert len(rotor.split(only_watertight=True)) == 9


def test_each_section_lies_at_its_stagger_chord_and_shifts():
    table = FAU.design().table()
    table["sweep"] = np.linspace(0.0, 0.02, 10)
    table["dihedral"] = np.linspace(0.0, -0.01, 10)
    sections = BladeSections.from_columns(table, camber_position=0.5, points=30)
    plain = FAU.design().sections(points=30)
    for k, (loop, flat) in enumerate(zip(sections.loops(), plain.loops(), strict=True)):
        radius = sections.radius[k]
        x, s = loop[:, 0], radius * np.arctan2(loop[:, 2], loop[:, 1])
        trailing, leading = 0, 29  # the outline runs from the trailing edge round the nose
        assert x[leading] < x[trailing] and s[leading] < s[trailing]  # upstream, smaller θ
        assert math.hypot(x[trailing] - x[leading], s[trailing] - s[leading]) == pytest.approx(
            sections.chord[k], rel=1e-12)
        assert math.degrees(math.atan2(x[trailing] - x[leading], s[trailing] - s[leading])
                            ) == pytest.approx(sections.stagger[k], abs=1e-9)
        # Sweep along the chord towards the trailing edge, dihedral normal to it towards the
        # suction side (upstream and against the rotation: the camber's convex side).
        lam = math.radians(sections.stagger[k])
        along, normal = np.array([math.sin(lam), math.cos(lam)]), np.array(
            [-math.cos(lam), math.sin(lam)])
        flat_x, flat_s = flat[:, 0], radius * np.arctan2(flat[:, 2], flat[:, 1])
        shift = np.array([x[leading] - flat_x[leading], s[leading] - flat_s[leading]])
        expected = table["sweep"][k] * along + table["dihedral"][k] * normal
        np.testing.assert_allclose(shift, expected, atol=1e-12)
        mid = 0.5 * np.array([x[leading] + x[trailing], s[leading] + s[trailing]])
        bulge = np.array([x[7], s[7]]) - mid  # a point of the upper (suction) surface
        assert bulge @ normal > 0


def test_blades_that_would_overlap_are_refused():
    crowded = BladeSections([0.1, 0.2], [0.2, 0.2], [10.0, 10.0], [0.04, 0.04], [0.1, 0.1],
                            [0.0, 0.0], [0.0, 0.0])
    assert crowded.blade().is_watertight
    with pytest.raises(ValueError, match=re.escape("9 blades overlap at r = 0.1 m")):
        crowded.rotor(9)


@pytest.mark.parametrize(
    "change, named",
    [
        ({"flow_rate": -1.0}, "flow_rate must be a positive number, got -1.0"),
        ({"pressure_rise": 0.0}, "pressure_rise must be a positive number"),
        ({"speed": float("nan")}, "speed must be a positive number"),
        ({"hub_diameter": 0.6}, "hub_diameter must be smaller than tip_diameter"),
        ({"blades": 0}, "blades must be a positive integer, got 0"),
        ({"blades": 9.0}, "blades must be a positive integer, got 9.0"),
        ({"hydraulic_efficiency": 1.2}, "hydraulic_efficiency must be in (0, 1]"),
        ({"section": "45x0"}, "NACA 4-digit code must be four digits"),
        ({"angles_of_attack": (8.0,)}, "angles_of_attack needs one angle per section"),
        ({"angles_of_attack": (8.0, -5.0)}, "zero-lift angle -4.58° and 20°, got -5.0"),
        ({"glide_ratio": -0.1}, "glide_ratio must be in [0, 1)"),
    ],
)
def test_bad_specifications_are_refused_naming_the_value(change, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        FanSpecification(**change)


def test_a_duty_point_out_of_reach_is_refused():
    with pytest.raises(ValueError, match=re.escape("pressure_rise 2000.0 Pa is out of reach")):
        FanSpecification(pressure_rise=2000.0).design()
    with pytest.raises(ValueError, match="needs a swirl c_u >= the blade speed u at the hub"):
        FanSpecification(hub_diameter=0.1).design()


@pytest.mark.parametrize(
    "column, value, named",
    [
        ("r", [0.2, 0.1], "sections' r must be positive and increasing"),
        ("chord", [0.05, -0.01], "sections' chord must be positive"),
        ("stagger", [30.0, 95.0], "sections' stagger must be in (0, 90) degrees"),
        ("thickness", [0.1, 0.6], "sections' thickness must be in (0, 0.5)"),
        ("camber", [0.04, float("nan")], "sections' camber must be a row of finite numbers"),
    ],
)
def test_bad_section_tables_are_refused_naming_the_column(column, value, named):
    table = {"r": [0.1, 0.2], "chord": [0.05, 0.04], "stagger": [40.0, 20.0],
             "camber": [0.04, 0.04], "thickness": [0.1, 0.1], "sweep": [0.0, 0.0],
             "dihedral": [0.0, 0.0], column: value}
    with pytest.raises(ValueError, match=re.escape(named)):
        BladeSections.from_columns(table)
    del table["dihedral"]
    with pytest.raises(ValueError, match="missing dihedral"):
        BladeSections.from_columns(table)


def test_a_stagger_below_zero_lift_gives_no_swirl():
    flat = BladeSections([0.1, 0.2], [0.05, 0.04], [5.0, 3.0], [0.0, 0.0], [0.1, 0.1],
                         [0.0, 0.0], [0.0, 0.0])
    below = "r = 0.1 m meets the inflow below its zero-lift angle"
    with pytest.raises(ValueError, match=re.escape(below)):
        swirl_from_blades(flat, 9, 1486.0, 10.0)

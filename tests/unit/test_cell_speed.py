"""The fused cell-centred speed equals the speed of the cell-centred components."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.numerics import stencils
from tachyflow.solvers.base import solver_class


@pytest.mark.parametrize("case", ["taylor-green", "channel", "rotating-pipe", "taylor-couette"])
def test_the_speed_of_a_solver_is_the_norm_of_its_centred_components(case):
    settings = config.load(case).replace("grid", cells=(6, 8, 10))
    solver = solver_class(settings.case.solver).from_case(settings, MPI.COMM_SELF, "estimate")
    solver.step(solver.stable_time_step(0.5))  # fields that vary in every direction
    components = [solver.cell_field(name) for name in ("u", "v", "w")]
    expected = np.sqrt(sum(component**2 for component in components))
    speed = solver.cell_speed(np.empty(expected.shape))
    assert np.abs(expected).max() > 0
    np.testing.assert_allclose(speed, expected, rtol=1e-13, atol=1e-15 * np.abs(expected).max())
    solver.free()
    solver.decomposition.free()


def test_radial_scales_of_the_wrong_length_are_refused():
    ghosted = np.zeros((4, 5, 6))
    with pytest.raises(ValueError, match=r"radial_scale must have shape \(3,\)"):
        stencils.centred_speed(ghosted, ghosted, ghosted, np.empty((2, 3, 4)), np.ones(5))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_centred_component_is_the_mean_of_its_two_faces(dtype):
    field = np.random.default_rng(3).random((5, 6, 7))
    radii = np.linspace(0.5, 1.5, 4)
    owned = (slice(1, -1),) * 3
    for axis in range(3):
        below = [slice(1, -1)] * 3
        below[axis] = slice(0, -2)
        for divisors in (None, radii):
            expected = 0.5 * (field[owned] + field[tuple(below)])
            if divisors is not None:
                expected = expected / divisors[None, :, None]
            out = stencils.centred_component(field, axis, np.empty((3, 4, 5), dtype), divisors)
            np.testing.assert_allclose(out, expected, rtol=1e-15 if dtype is np.float64 else 1e-7)


def test_a_centred_component_refuses_a_wrong_axis_or_shape():
    with pytest.raises(ValueError, match="axis must be 0, 1 or 2"):
        stencils.centred_component(np.zeros((4, 5, 6)), 3, np.empty((2, 3, 4)))
    with pytest.raises(ValueError, match=r"ghosted field of shape \(4, 5, 6\)"):
        stencils.centred_component(np.zeros((4, 5, 7)), 0, np.empty((2, 3, 4)))

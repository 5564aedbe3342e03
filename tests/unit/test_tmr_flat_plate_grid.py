"""The nested flat-plate grid family shaped like the NASA Turbulence Modeling Resource's
zero-pressure-gradient plate grids, and the ``flat-plate-tmr`` grid of the compressible
solver that picks a level by its cell count."""

import dataclasses

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics.airfoil_grids import tmr_flat_plate_grid
from tachyflow.solvers.compressible.grids import build_grid
from tachyflow.solvers.compressible.solver import CompressibleSolver


def test_levels_have_the_tmr_sizes_domain_and_nest():
    finest = tmr_flat_plate_grid(0)
    assert finest.cells == (544, 384)  # 545 x 385 points
    assert finest.x[0, 0] == pytest.approx(-1 / 3) and finest.x[-1, 0] == pytest.approx(2.0)
    assert finest.y[0, -1] == pytest.approx(1.0)
    assert finest.x[finest.wall[0], 0] == 0.0 and finest.wall == (96, 544)
    assert finest.y[0, 1] == pytest.approx(5e-7)
    sizes = [(544, 384), (272, 192), (136, 96), (68, 48), (34, 24)]
    for level, cells in enumerate(sizes):
        grid = tmr_flat_plate_grid(level)
        step = 2**level
        assert grid.cells == cells
        assert np.array_equal(grid.x, finest.x[::step, ::step])
        assert np.array_equal(grid.y, finest.y[::step, ::step])
        assert grid.x[grid.wall[0], 0] == 0.0  # the leading edge is a grid line on every level
        assert np.all(grid.cell_areas() > 0)


def test_level_outside_the_family_is_refused():
    for level in (-1, 5, 1.0):
        with pytest.raises(ValueError, match="level must be in"):
            tmr_flat_plate_grid(level)


def test_the_solver_grid_picks_the_level_from_the_cells():
    section = config.load("flat-plate-turbulent").compressible
    assert build_grid(section).cells == tuple(section.cells) == (136, 96)
    with pytest.raises(ValueError, match=r"one of the family's levels"):
        build_grid(dataclasses.replace(section, cells=(100, 50)))
    with pytest.raises(ConfigError, match="one of the family's levels"):
        case = config.load("flat-plate-turbulent").replace("compressible", cells=(100, 50))
        CompressibleSolver.from_case(case, MPI.COMM_SELF)

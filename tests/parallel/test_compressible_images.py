"""Pictures of the compressible solver's Mach number and pressure near the airfoil, each
rank sampling its own block: written, not blank, the body left out, and the same on 1, 2
and 3 ranks."""

import dataclasses

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.insitu.raster import composite, pixel_centres, rasterise_block
from tachyflow.simulation import Simulation
from tachyflow.solvers.compressible.grids import build_grid
from tests.parallel.helpers import shared_folder

NACA = {
    "grid": "naca0012", "cells": [64, 16], "wake_cells": 12, "far_field": 8.0,
    "wall_spacing": 2e-3, "mach": 0.5, "alpha": 2.0, "reynolds": 5000.0,
    "time_stepping": "rk3",
}
WINDOW = (-0.5, 1.5, -0.5, 0.5)


def image_case():
    case = config.load("naca0012").replace("compressible", **NACA)
    case = case.replace("time", steps=4, cfl=0.5).replace("output", images_every=2)
    return dataclasses.replace(case, observers={"block-images": {"window": list(WINDOW)}})


def pictures_of(case, folder, comm):
    simulation = Simulation(case, folder, comm)
    simulation.run()
    (observer,) = [o for o in simulation.observers if o.name == "block-images"]
    pictures = observer.pictures(simulation)
    simulation.free()
    return pictures


def png(path) -> np.ndarray:
    import matplotlib.image

    return matplotlib.image.imread(path)[..., :3]


@pytest.mark.parallel([1, 2, 3])
def test_mach_and_pressure_pictures_are_drawn_alike_on_any_rank_count(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    case = image_case()
    pictures = pictures_of(case, folder / "parallel", comm)
    if comm.rank != 0:
        return
    serial = pictures_of(case, folder / "serial", MPI.COMM_SELF)
    for name in ("mach", "p"):
        written = sorted(p.name for p in (folder / "parallel" / "images").glob(f"{name}_*.png"))
        assert written == [f"{name}_0000000{s}.png" for s in (2, 4)]
        image = png(folder / "parallel" / "images" / f"{name}_00000004.png")
        assert image.std() > 0.05  # not blank
        reference = png(folder / "serial" / "images" / f"{name}_00000004.png")
        assert np.mean(np.abs(image - reference) > 2 / 255) < 1e-3
        finite = np.isfinite(serial[name])
        assert np.array_equal(np.isfinite(pictures[name]), finite)
        assert np.allclose(pictures[name][finite], serial[name][finite], rtol=1e-10)
    # Mach: still near 0.5 after a few steps, faster over the suction side.
    mach = pictures["mach"]
    assert 0.3 < np.nanmedian(mach) < 0.7 and np.nanmax(mach) > 0.5
    # Nothing is drawn inside the body: the uncovered area is the airfoil's.
    grid = build_grid(case.compressible)
    start, stop = grid.wall
    x, y = grid.x[start : stop + 1, 0], grid.y[start : stop + 1, 0]
    airfoil = 0.5 * abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1)))
    nx, ny = mach.shape
    pixel = (WINDOW[1] - WINDOW[0]) / nx * (WINDOW[3] - WINDOW[2]) / ny
    assert np.count_nonzero(~np.isfinite(mach)) * pixel == pytest.approx(airfoil, rel=0.05)


def test_a_linear_field_on_a_curved_block_is_sampled_exactly():
    i, j = np.meshgrid(np.linspace(0, 1, 7), np.linspace(0, 1, 5), indexing="ij")
    x, y = i + 0.2 * j, j + 0.1 * i**2
    window, shape = (-0.1, 1.3, -0.1, 1.2), (70, 65)
    picture = composite(rasterise_block(x, y, 3 * x - 2 * y + 1, window, shape))
    px, py = np.meshgrid(*pixel_centres(window, shape), indexing="ij")
    inside = np.isfinite(picture)
    assert np.allclose(picture[inside], (3 * px - 2 * py + 1)[inside], atol=1e-12)
    # The block's area, up to the pixels its outline cuts.
    area = inside.sum() * (1.4 / 70) * (1.3 / 65)
    assert area == pytest.approx(1.0 + 0.1 / 3, rel=0.05)


def test_two_halves_of_a_block_add_up_to_the_whole():
    i, j = np.meshgrid(np.linspace(0, 1, 9), np.linspace(0, 1, 6), indexing="ij")
    x, y = i + 0.3 * np.sin(j), j
    values = np.cos(3 * x) * y
    window, shape = (0, 1.3, 0, 1), (40, 30)
    whole = rasterise_block(x, y, values, window, shape)
    halves = sum(
        rasterise_block(x[part], y[part], values[part], window, shape)
        for part in (np.s_[:5], np.s_[4:])
    )
    assert np.array_equal(halves[1] > 0, whole[1] > 0)
    assert np.allclose(composite(halves), composite(whole), equal_nan=True, rtol=1e-13)


@pytest.mark.parametrize(
    ("window", "shape"), [((0, 0, 0, 1), (4, 4)), ((0, 1, 0, np.nan), (4, 4)),
                          ((0, 1, 0, 1), (1, 4)), ((0, 1, 0, 1), (4.0, 4))],
)
def test_bad_windows_and_shapes_are_refused(window, shape):
    with pytest.raises(ValueError, match=r"window|shape"):
        rasterise_block(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2)), window, shape)

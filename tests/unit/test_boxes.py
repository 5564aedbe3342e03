"""Boxes of cells: a slice's cells, and a box cut from pieces and arrays."""

import numpy as np
import pytest

from tachyflow.insitu.boxes import CellBox
from tachyflow.insitu.extract import extract_slice, slice_cells
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel.pencil import Pencil

STRETCHED = StaggeredGrid((40, 36, 44), (1.0, 1.0, 1.0), periodic_y=False, stretching=1.5)


def test_union_intersection_and_position_in_an_outer_array():
    box = CellBox((1, 0, 2), (5, 4, 3))
    assert box.stop == (6, 4, 5) and box.size == 60
    assert box.union(CellBox((0, 3, 4), (2, 3, 4))) == CellBox((0, 0, 2), (6, 6, 6))
    pencil = Pencil("y", (3, 8, 2), (4, 0, 4))  # cells x 4-6, z 4-5
    assert box.intersection(pencil) == CellBox((4, 0, 4), (2, 4, 1))
    assert box.intersection(Pencil("y", (3, 8, 2), (0, 0, 0))).shape == (2, 4, 0)  # z apart
    outer = np.arange(7 * 5 * 6).reshape(7, 5, 6)
    part = CellBox((4, 0, 4), (2, 4, 1))
    assert np.array_equal(outer[box.slices][part.within(box)], outer[part.slices])
    with pytest.raises(ValueError, match=r"does not lie inside CellBox\(start=\(1, 0, 2\)"):
        CellBox((0, 0, 0), (2, 2, 2)).within(box)
    with pytest.raises(TypeError, match="a box's start must be three integers, got"):
        CellBox((0, 0), (1, 1, 1))
    with pytest.raises(TypeError, match=r"a box's shape must be three integers, got \(1, 1\.0"):
        CellBox((0, 0, 0), (1, 1.0, 1))
    with pytest.raises(ValueError, match=r"a box's start must not be negative, got \(0, -1, 0\)"):
        CellBox((0, -1, 0), (1, 1, 1))


@pytest.mark.parametrize(
    ("axis", "position", "layers"),
    [
        ("x", 0.5, (19, 2)),  # between the centres of cells 19 and 20
        ("y", 0.3, None),  # filled in below: the layers around y = 0.3
        ("y", float(STRETCHED.centres_y[7]), (7, 1)),  # through a layer of centres
        ("y", float(STRETCHED.centres_y[-1]), (35, 1)),  # the last centre of a wall-bounded y
        ("z", 10.5 / 44, (10, 1)),
        ("z", 0.999, (0, 44)),  # past the last centre: the layer above is cell 0's image
    ],
)
def test_a_slice_of_the_cells_it_reads_is_the_slice_of_the_whole_field(axis, position, layers):
    index = "xyz".index(axis)
    if layers is None:
        below = int(np.searchsorted(STRETCHED.centres_y, position)) - 1
        layers = (below, 2)
    cells = slice_cells(STRETCHED, axis, position)
    expected = [(0, n) for n in STRETCHED.shape]
    expected[index] = layers
    assert list(zip(cells.start, cells.shape, strict=True)) == expected
    field = np.random.default_rng(7).standard_normal(STRETCHED.shape)
    whole = extract_slice(np.pad(field, 1, mode="wrap"), STRETCHED, (0, 0, 0), axis, position)
    ghosted = np.pad(field[cells.slices], 1, mode="wrap")
    part = extract_slice(ghosted, STRETCHED, cells.start, axis, position)
    assert np.array_equal(part.values, whole.values) and part.values.size > 0
    assert part.start == whole.start
    for ours, theirs in zip(part.coordinates, whole.coordinates, strict=True):
        assert np.array_equal(ours, theirs)


@pytest.mark.parametrize(
    ("points", "whole_axes"),
    [
        ([[0.31, 0.42, 0.55], [0.52, 0.6, 0.47], [0.4, 0.5, 0.61]], ()),
        ([[0.005, 0.42, 0.55], [0.52, 0.6, 0.47]], (0,)),  # x stencil across x = 0
        ([[0.31, 0.42, 0.999]], (2,)),  # z stencil across z = L
    ],
)
def test_probes_from_the_cells_they_read_equal_probes_of_the_whole_field(points, whole_axes):
    from tachyflow.insitu.pipelines import padded, probe_cells, probe_values

    points = np.array(points)
    cells = probe_cells(STRETCHED, points)
    for axis in range(3):
        assert (cells.shape[axis] == STRETCHED.shape[axis]) == (axis in whole_axes)
    assert cells.size < STRETCHED.shape[0] * STRETCHED.shape[1] * STRETCHED.shape[2]
    field = np.random.default_rng(11).standard_normal(STRETCHED.shape)
    whole = probe_values(padded(field), STRETCHED, (0, 0, 0), points)
    part = probe_values(padded(field[cells.slices]), STRETCHED, cells.start, points)
    assert np.array_equal(part, whole) and np.all(np.isfinite(part))

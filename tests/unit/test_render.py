import ctypes
import os
import subprocess
import sys

import matplotlib
import numpy as np
import pytest
from PIL import Image

from tachyflow.insitu.extract import (
    Isosurface,
    PlaneSlice,
    extract_isosurface,
    extract_slice,
    slice_range,
)
from tachyflow.insitu.render import SCENE_WIDTH, SceneRenderer, colour_map_table
from tachyflow.numerics.grid import StaggeredGrid

UNIFORM = StaggeredGrid((40, 40, 40), (1.0, 1.0, 1.0))
STRETCHED = StaggeredGrid((40, 36, 44), (1.0, 1.0, 1.0), periodic_y=False, stretching=1.5)
BACKGROUND = np.array([255, 255, 255])
# Adjacent entries of a 256-colour map differ by at most 3 levels in the maps used here,
# so a pixel that lands one entry off still passes; a wrong colour does not.
COLOUR_TOLERANCE = 4


def cell_centres(grid):
    """Coordinate arrays x, y, z of every cell centre, shape ``grid.shape``."""
    nx, _, nz = grid.shape
    axes = (
        (np.arange(nx) + 0.5) * grid.spacing_x,
        grid.centres_y,
        (np.arange(nz) + 0.5) * grid.spacing_z,
    )
    return np.meshgrid(*axes, indexing="ij")


def ghosted(field):
    """A whole field with the one-cell ghost layer (periodic images) a reader passes."""
    return np.pad(field, 1, mode="wrap")


def sphere_distance(grid, centre):
    """Distance to ``centre``, taking the nearest periodic image along periodic axes."""
    offsets = []
    for axis, coordinate in enumerate(cell_centres(grid)):
        offset = coordinate - centre[axis]
        if axis != 1 or grid.periodic_y:
            length = grid.lengths[axis]
            offset = (offset + 0.5 * length) % length - 0.5 * length
        offsets.append(offset)
    return np.sqrt(sum(o**2 for o in offsets))


def read_png(path):
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def expected_colour(name, value, low, high):
    return np.round(np.array(matplotlib.colormaps[name]((value - low) / (high - low))[:3]) * 255)


def colour_at(image, renderer, point):
    column, row = renderer.world_to_pixel(point)
    return image[int(row), int(column)]


@pytest.mark.parametrize(
    ("grid", "centre"),
    [
        (UNIFORM, (0.5, 0.5, 0.5)),
        (STRETCHED, (0.5, 0.45, 0.55)),
        (UNIFORM, (0.02, 0.5, 0.97)),  # across the periodic x and z boundaries
    ],
    ids=["uniform", "stretched-y", "across-periodic-boundaries"],
)
def test_sphere_isosurface_has_the_sphere_area_within_one_percent(grid, centre):
    radius = 0.3
    x = cell_centres(grid)[0]
    surface = extract_isosurface(
        ghosted(sphere_distance(grid, centre)), radius, grid, (0, 0, 0), colour_by=ghosted(x)
    )
    assert surface.area() == pytest.approx(4 * np.pi * radius**2, rel=0.01)
    points = surface.points.astype(np.float64)
    offsets = [points[:, a] - centre[a] for a in range(3)]
    for axis in (0, 2):  # the surface is the nearest image's: unwrap like the field
        offsets[axis] = (offsets[axis] + 0.5) % 1.0 - 0.5
    distance = np.sqrt(sum(o**2 for o in offsets))
    # Linear interpolation of the distance along an edge h long errs by up to h²/8r.
    largest_cell = max(grid.spacing_x, grid.widths_y.max(), grid.spacing_z)
    assert np.abs(distance - radius).max() < largest_cell**2 / (8 * radius)
    # Colour scalars interpolate x: where x does not jump across the period they are x.
    inside = (points[:, 0] > x.min()) & (points[:, 0] < x.max())
    np.testing.assert_allclose(surface.scalars[inside], points[inside, 0], atol=1e-6)


def test_slice_is_linear_between_the_layers_around_the_plane():
    x, y, z = cell_centres(STRETCHED)
    field = x + 3 * y - 2 * z  # linear: interpolation between layers is exact
    for axis, position in [("x", 0.5), ("y", 0.3), ("y", STRETCHED.centres_y[7]), ("z", 0.99)]:
        plane = extract_slice(ghosted(field), STRETCHED, (0, 0, 0), axis, position)
        index = "xyz".index(axis)
        coordinates = np.meshgrid(*plane.coordinates, indexing="ij")
        points = [*coordinates[:index], position, *coordinates[index:]]
        expected = points[0] + 3 * points[1] - 2 * points[2]
        if axis == "z":
            # Past the last layer the upper one is the periodic image of the first, whose
            # z is one period less: the term -2z gains 2 L_z times that layer's weight.
            weight = (position - z[0, 0, -1]) / STRETCHED.spacing_z
            expected = expected + 2 * STRETCHED.lengths[2] * weight
        assert plane.values.shape == tuple(STRETCHED.shape[a] for a in plane.plane_axes)
        np.testing.assert_allclose(plane.values, expected, atol=1e-12)
    on_layer = extract_slice(ghosted(field), STRETCHED, (0, 0, 0), "y", STRETCHED.centres_y[7])
    np.testing.assert_array_equal(on_layer.values, field[:, 7, :])


def test_slice_pixels_have_the_colour_map_colour_of_the_field(tmp_path):
    grid = StaggeredGrid((40, 20, 10), (2.0, 1.0, 0.5))
    x = cell_centres(grid)[0]
    with SceneRenderer((640, 480)) as renderer:
        assert renderer.backend in {"vtkEGLRenderWindow", "vtkOSOpenGLRenderWindow"}
        plane = extract_slice(ghosted(x), grid, (0, 0, 0), "z", 0.25)
        path = renderer.render_slice(plane, tmp_path / "x.png", field="x", value_range=(0, 2))
        image = read_png(path)
        assert image.shape == (480, 640, 3)
        for value in (0.05, 0.2, 0.5, 1.0, 1.5, 1.9, 1.95):
            for height in (0.05, 0.5, 0.95):
                got = colour_at(image, renderer, (value, height, 0.25))
                expected = expected_colour("viridis", value, 0, 2)
                assert np.abs(got - expected).max() <= COLOUR_TOLERANCE, (value, height)
        # The slice spans the first to the last centre; just beyond is the background.
        assert np.array_equal(colour_at(image, renderer, (0.0, 0.5, 0.25)), BACKGROUND)
        assert np.array_equal(colour_at(image, renderer, (2.0, 0.5, 0.25)), BACKGROUND)


def test_slice_of_a_stretched_y_is_drawn_at_the_true_coordinates(tmp_path):
    # An x-plane shows z to the right and y up; with f = y on a stretched y, every pixel
    # shows the colour of its own height only if the centres are placed where they are.
    y = cell_centres(STRETCHED)[1]
    plane = extract_slice(ghosted(y), STRETCHED, (0, 0, 0), "x", 0.4)
    low, high = STRETCHED.centres_y[0], STRETCHED.centres_y[-1]
    with SceneRenderer((400, 400)) as renderer:
        path = renderer.render_slice(plane, tmp_path / "y.png", field="y", colour_map="RdBu_r")
        image = read_png(path)
        for height in (0.03, 0.1, 0.3, 0.5, 0.75, 0.96):
            for depth in (0.1, 0.9):
                got = colour_at(image, renderer, (0.4, height, depth))
                expected = expected_colour("RdBu_r", height, low, high)  # automatic range
                assert np.abs(got - expected).max() <= COLOUR_TOLERANCE, (height, depth)
        right_of = (
            renderer.world_to_pixel((0.4, 0.5, 0.9))[0]
            > renderer.world_to_pixel((0.4, 0.5, 0.1))[0]
        )
        above = (
            renderer.world_to_pixel((0.4, 0.9, 0.5))[1]
            < renderer.world_to_pixel((0.4, 0.1, 0.5))[1]
        )
        assert right_of and above  # z to the right, y up


def scene_pixels(image):
    """Pixels left of the colour bar panel."""
    return image[:, : int(SCENE_WIDTH * image.shape[1]) - 1]


def bar_pixels(image):
    return image[:, int(SCENE_WIDTH * image.shape[1]) + 1 :]


def is_background(pixels):
    return np.all(pixels == BACKGROUND, axis=-1)


def run_length(mask, index):
    """Length of the run of true values of the 1D ``mask`` that contains ``index``."""
    if not mask[index]:
        return 0
    left = right = index
    while left > 0 and mask[left - 1]:
        left -= 1
    while right < len(mask) - 1 and mask[right + 1]:
        right += 1
    return right - left + 1


def silhouette(image, renderer, centre):
    """Width and height in pixels of the object drawn over the point ``centre``."""
    column, row = (int(v) for v in renderer.world_to_pixel(centre))
    covered = ~is_background(scene_pixels(image))
    return run_length(covered[row], column), run_length(covered[:, column], row)


def test_isosurface_picture_shows_the_surface_annotation_and_colour_bar(tmp_path):
    # A sphere in the stretched grid: drawn round only if y is mapped right.
    radius, centre = 0.3, (0.5, 0.45, 0.55)
    x = cell_centres(STRETCHED)[0]
    surface = extract_isosurface(
        ghosted(sphere_distance(STRETCHED, centre)), radius, STRETCHED, (0, 0, 0), ghosted(x)
    )
    with SceneRenderer((480, 360)) as renderer:
        path = renderer.render_isosurface(
            surface,
            tmp_path / "sphere.png",
            field="x",
            title="distance = 0.3",
            step=40,
            time=0.125,
        )
        image = read_png(path)
        assert image.shape == (360, 480, 3)
        width, height = silhouette(image, renderer, centre)
        assert width > 100 and height == pytest.approx(width, rel=0.03)
        # The colour bar panel shows both ends of the colour map.
        bar = bar_pixels(image).reshape(-1, 3)
        for end in (0.0, 1.0):
            colour = expected_colour("viridis", end, 0, 1)
            assert np.abs(bar - colour).max(axis=1).min() <= COLOUR_TOLERANCE
        corner = (slice(0, 360 // 10), slice(0, 480 // 4))
        assert not is_background(image[corner]).all()  # the annotation is drawn

        plain = read_png(renderer.render_isosurface(surface, tmp_path / "plain.png"))
        assert is_background(plain[corner]).all()
        assert silhouette(plain, renderer, centre) == (width, height)


def test_uncoloured_isosurface_has_no_colour_bar(tmp_path):
    surface = extract_isosurface(
        ghosted(sphere_distance(UNIFORM, (0.5, 0.5, 0.5))), 0.3, UNIFORM, (0, 0, 0)
    )
    assert surface.scalars is None
    with SceneRenderer((320, 240)) as renderer:
        image = read_png(renderer.render_isosurface(surface, tmp_path / "grey.png"))
        assert not is_background(colour_at(image, renderer, (0.5, 0.5, 0.5)))
        assert is_background(bar_pixels(image)).all()


def test_one_renderer_draws_successive_frames_of_different_data(tmp_path):
    box = (0, 1, 0, 1, 0, 1)
    centre = (0.5, 0.5, 0.5)
    distance = ghosted(sphere_distance(UNIFORM, centre))
    x, y, _ = cell_centres(UNIFORM)
    with SceneRenderer((400, 300)) as renderer:
        large = read_png(
            renderer.render_isosurface(
                extract_isosurface(distance, 0.3, UNIFORM, (0, 0, 0)),
                tmp_path / "1.png",
                bounds=box,
            )
        )
        plane = extract_slice(ghosted(y), UNIFORM, (0, 0, 0), "z", 0.5)
        sliced = read_png(
            renderer.render_slice(plane, tmp_path / "2.png", colour_map="magma", step=2)
        )
        low, high = plane.values.min(), plane.values.max()
        for height in (0.1, 0.5, 0.9):
            got = colour_at(sliced, renderer, (0.5, height, 0.5))
            assert (
                np.abs(got - expected_colour("magma", height, low, high)).max() <= COLOUR_TOLERANCE
            )
        small = read_png(
            renderer.render_isosurface(
                extract_isosurface(distance, 0.15, UNIFORM, (0, 0, 0)),
                tmp_path / "3.png",
                bounds=box,
            )
        )
        # Same camera (same box), radius halved.
        ratio = silhouette(small, renderer, centre)[0] / silhouette(large, renderer, centre)[0]
        assert 0.45 < ratio < 0.55
        # Nothing of the coloured slice is left: the uncoloured sphere is bluish grey,
        # the outline black, the background white.
        assert np.ptp(small, axis=-1).max() <= 0.1 * 255
        again = read_png(
            renderer.render_slice(
                extract_slice(ghosted(x), UNIFORM, (0, 0, 0), "z", 0.5),
                tmp_path / "4.png",
                value_range=(0, 1),
            )
        )
        for value in (0.1, 0.5, 0.9):
            got = colour_at(again, renderer, (value, 0.5, 0.5))
            assert np.abs(got - expected_colour("viridis", value, 0, 1)).max() <= COLOUR_TOLERANCE


def test_an_isovalue_outside_the_field_gives_an_empty_surface_that_still_renders(tmp_path):
    x = ghosted(cell_centres(UNIFORM)[0])
    surface = extract_isosurface(x, 5.0, UNIFORM, (0, 0, 0), colour_by=x)
    assert surface.points.shape == (0, 3) and surface.scalars.shape == (0,)
    with SceneRenderer((200, 160)) as renderer:
        image = read_png(renderer.render_isosurface(surface, tmp_path / "none.png"))
        assert image.shape == (160, 200, 3)
        assert is_background(scene_pixels(image)).all()


def test_colour_map_table_is_matplotlibs():
    table = colour_map_table("coolwarm")
    assert table.shape == (256, 4) and table.dtype == np.uint8
    np.testing.assert_array_equal(table[0, :3], expected_colour("coolwarm", 0, 0, 1))
    np.testing.assert_array_equal(table[-1, :3], expected_colour("coolwarm", 1, 0, 1))


def test_pieces_and_renderers_reject_bad_input(tmp_path):
    field = ghosted(cell_centres(UNIFORM)[0])
    with pytest.raises(ValueError, match=r"starting at \(1, 0, 0\) does not fit the grid"):
        extract_isosurface(field, 0.5, UNIFORM, (1, 0, 0))
    with pytest.raises(TypeError, match="field must be a 3D floating-point numpy array"):
        extract_isosurface(field.astype(int), 0.5, UNIFORM, (0, 0, 0))
    with pytest.raises(ValueError, match=r"colour_by has shape \(41, 42, 42\)"):
        extract_isosurface(field, 0.5, UNIFORM, (0, 0, 0), colour_by=field[1:])
    with pytest.raises(ValueError, match="isovalue must be a finite number, got nan"):
        extract_isosurface(field, np.nan, UNIFORM, (0, 0, 0))
    with pytest.raises(ValueError, match="slice axis must be 'x', 'y', 'z' or 0, 1, 2, got 'w'"):
        extract_slice(field, UNIFORM, (0, 0, 0), "w", 0.5)
    walls = ghosted(cell_centres(STRETCHED)[0])
    low, high = slice_range(STRETCHED, "y")
    assert (low, high) == (STRETCHED.centres_y[0], STRETCHED.centres_y[-1])
    assert slice_range(STRETCHED, "x") == (0.0, 1.0)
    with pytest.raises(ValueError, match=r"a plane y = 0.0 is outside \[0.00"):
        extract_slice(walls, STRETCHED, (0, 0, 0), "y", 0.0)
    with pytest.raises(ValueError, match="must be an \\(n, 3\\) float32 array"):
        Isosurface(np.zeros((2, 3)), np.zeros((0, 3), np.int32))
    with pytest.raises(ValueError, match=r"vertex indices must lie in \[0, 2\), got \[0, 2\]"):
        Isosurface(np.zeros((2, 3), np.float32), np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="unknown colour map 'no-such-map'"):
        SceneRenderer(colour_map="no-such-map")
    with pytest.raises(ValueError, match=r"size must be two integers >= 16 .*got \(8, 600\)"):
        SceneRenderer(size=(8, 600))
    plane = extract_slice(field, UNIFORM, (0, 0, 0), "x", 0.5)
    with SceneRenderer((64, 64)) as renderer:
        with pytest.raises(ValueError, match=r"two finite numbers low < high, got \(1, 0\)"):
            renderer.render_slice(plane, tmp_path / "s.png", value_range=(1, 0))
        with pytest.raises(ValueError, match="unknown colour map 'jett'"):
            renderer.render_slice(plane, tmp_path / "s.png", colour_map="jett")
        empty = PlaneSlice(0, 0.5, np.empty((0, 0)), (0, 0), (np.empty(0), np.empty(0)))
        with pytest.raises(ValueError, match="cannot draw an empty slice"):
            renderer.render_slice(empty, tmp_path / "s.png")
    assert not list(tmp_path.iterdir())  # no file, not even a temporary one


def osmesa_loadable():
    """Whether the OSMesa library loads, under the names VTK tries."""
    for name in ("libOSMesa.so", "libOSMesa.so.6", "libOSMesa.so.8"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return True
    return False


def test_without_any_offscreen_back_end_the_error_names_the_packages():
    # EGL is switched off by pointing glvnd at no vendor library; VTK then falls back to
    # OSMesa, which works only where libosmesa6 is installed.
    environment = {**os.environ, "__EGL_VENDOR_LIBRARY_FILENAMES": "/nonexistent.json"}
    environment.pop("VTK_DEFAULT_OPENGL_WINDOW", None)
    script = (
        "from tachyflow.insitu.render import SceneRenderer\n"
        "print(SceneRenderer((32, 32)).backend)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if osmesa_loadable():
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "vtkOSOpenGLRenderWindow"
    else:
        assert result.returncode == 1, result.stderr
        assert "OffscreenRenderingUnavailable: VTK found no offscreen OpenGL" in result.stderr
        assert "libegl-mesa0" in result.stderr and "libosmesa6" in result.stderr

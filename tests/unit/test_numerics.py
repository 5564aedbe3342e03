import itertools

import numpy as np
import pytest
from scipy.linalg import solve

from tachyflow.numerics import fft
from tachyflow.numerics.grid import StaggeredGrid, tanh_faces
from tachyflow.numerics.runge_kutta import rk3_increment
from tachyflow.numerics.tdma import solve_tridiagonal_lines


def dense(lower, diagonal, upper, shift, periodic):
    n = len(diagonal)
    matrix = np.diag(diagonal + shift) + np.diag(lower[1:], -1) + np.diag(upper[:-1], 1)
    if periodic:
        matrix[0, -1] += lower[0]
        matrix[-1, 0] += upper[-1]
    return matrix.reshape(n, n)


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_batched_thomas_matches_dense_solves(periodic, dtype):
    rng = np.random.default_rng(3)
    n0, n, n2 = 3, 7, 5
    lower, upper = rng.uniform(0.2, 1.0, n), rng.uniform(0.2, 1.0, n)
    diagonal = -(lower + upper) - rng.uniform(0.1, 1.0, n)
    shift = -rng.uniform(0.0, 2.0, (n0, n2))
    rhs = rng.standard_normal((n0, n, n2)).astype(dtype)
    if dtype == np.complex128:
        rhs += 1j * rng.standard_normal((n0, n, n2))
    expected = np.empty_like(rhs)
    for i in range(n0):
        for k in range(n2):
            matrix = dense(lower, diagonal, upper, shift[i, k], periodic)
            expected[i, :, k] = solve(matrix, rhs[i, :, k])
    result = solve_tridiagonal_lines(lower, diagonal, upper, rhs.copy(), shift, periodic=periodic)
    assert np.abs(result - expected).max() < 1e-12


@pytest.mark.parametrize("periodic", [False, True])
def test_complex_lines_solve_as_their_real_and_imaginary_parts_in_any_layout(periodic):
    # The complex kernels read a line's values as float64 pairs: the same operations as
    # two real solves, bit for bit; a right-hand side strided along its last axis too.
    rng = np.random.default_rng(11)
    n0, n, n2 = 4, 9, 6
    lower, upper = rng.uniform(0.2, 1.0, n), rng.uniform(0.2, 1.0, n)
    diagonal = -(lower + upper) - rng.uniform(0.1, 1.0, n)
    shift = -rng.uniform(0.0, 2.0, (n0, n2))
    pinned = np.zeros((n0, n2), dtype=bool)
    pinned[0, 0] = True
    real, imaginary = rng.standard_normal((2, n0, n, n2))
    complex_result = solve_tridiagonal_lines(
        lower, diagonal, upper, real + 1j * imaginary, shift, pinned, periodic=periodic
    )
    for part, values in ((complex_result.real, real), (complex_result.imag, imaginary)):
        expected = solve_tridiagonal_lines(
            lower, diagonal, upper, values.copy(), shift, pinned, periodic=periodic
        )
        assert np.array_equal(part, expected)
    assert np.all(complex_result[0, 0, 0] == 0.0)
    strided = np.zeros((n0, n, 2 * n2), dtype=np.complex128)
    strided[:, :, ::2] = real + 1j * imaginary
    solve_tridiagonal_lines(
        lower, diagonal, upper, strided[:, :, ::2], shift, pinned, periodic=periodic
    )
    assert np.array_equal(strided[:, :, ::2], complex_result)
    assert not strided[:, :, 1::2].any()


def test_a_weighted_second_shift_matches_dense_solves():
    rng = np.random.default_rng(5)
    n0, n, n2 = 2, 6, 3
    lower, upper = rng.uniform(0.2, 1.0, n), rng.uniform(0.2, 1.0, n)
    diagonal = -(lower + upper) - rng.uniform(0.1, 1.0, n)
    shift, scaled = -rng.uniform(0.0, 2.0, (n0, n2)), -rng.uniform(0.0, 2.0, (n0, n2))
    weights = 1.0 / rng.uniform(0.1, 1.0, n) ** 2  # 1 / r^2, as in a cylindrical Poisson
    rhs = rng.standard_normal((n0, n, n2)) + 1j * rng.standard_normal((n0, n, n2))
    expected = np.empty_like(rhs)
    for i in range(n0):
        for k in range(n2):
            matrix = dense(lower, diagonal + scaled[i, k] * weights, upper, shift[i, k], False)
            expected[i, :, k] = solve(matrix, rhs[i, :, k])
    result = solve_tridiagonal_lines(
        lower, diagonal, upper, rhs.copy(), shift, scaled=scaled, weights=weights
    )
    assert np.abs(result - expected).max() < 1e-12
    with pytest.raises(ValueError, match="give both or neither"):
        solve_tridiagonal_lines(lower, diagonal, upper, rhs.copy(), shift, scaled=scaled)
    with pytest.raises(ValueError, match="open systems only"):
        solve_tridiagonal_lines(lower, diagonal, upper, rhs.copy(), shift, periodic=True,
                                scaled=scaled, weights=weights)


@pytest.mark.parametrize("periodic", [False, True])
def test_pinned_line_solves_the_singular_neumann_system(periodic):
    n = 6
    lower, upper = np.ones(n), np.ones(n)
    if not periodic:
        lower[0] = upper[-1] = 0.0
    diagonal = -(lower + upper)
    exact = np.sin(np.arange(n) * 1.3)
    exact -= exact[0]
    rhs = dense(lower, diagonal, upper, 0.0, periodic) @ exact
    pinned = np.ones((1, 1), dtype=bool)
    result = solve_tridiagonal_lines(
        lower, diagonal, upper, rhs.reshape(1, n, 1).copy(), pinned=pinned, periodic=periodic
    )
    assert np.abs(result[0, :, 0] - exact).max() < 1e-13


def test_tridiagonal_input_checks():
    bands = (np.ones(4), -3 * np.ones(4), np.ones(4))
    with pytest.raises(TypeError, match="3D float64 or complex128 array, got 2D"):
        solve_tridiagonal_lines(*bands, np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"lower band has shape \(3,\), expected \(4,\)"):
        solve_tridiagonal_lines(np.ones(3), *bands[1:], np.zeros((2, 4, 2)))
    with pytest.raises(ValueError, match="at least 3 unknowns"):
        solve_tridiagonal_lines(*(b[:2] for b in bands), np.zeros((1, 2, 1)), periodic=True)


def test_modified_wavenumbers_are_the_eigenvalues_of_the_second_difference():
    n, h = 12, 0.3
    eigenvalues = fft.laplacian_eigenvalues(n, h)
    j = np.arange(n)
    for m in range(n):
        mode = np.exp(2j * np.pi * m * j / n)
        second_difference = (np.roll(mode, 1) - 2 * mode + np.roll(mode, -1)) / h**2
        assert np.allclose(second_difference, eigenvalues[m] * mode, atol=1e-12)
    assert len(fft.laplacian_eigenvalues(n, h, fft.half_spectrum_length(n))) == 7


@pytest.mark.parametrize("shape", [(6, 4, 10), (5, 3, 7), (1, 1, 1), (0, 3, 4)])
def test_planned_transforms_round_trip(shape):
    real = fft.empty(shape, np.float64)
    half = fft.empty((*shape[:2], fft.half_spectrum_length(shape[2])), np.complex128)
    forward = fft.AxisTransform(real, half, 2, "r2c", "estimate")
    backward = fft.AxisTransform(half, real, 2, "c2r", "estimate")
    data = np.random.default_rng(0).standard_normal(shape)
    real[...] = data
    forward()
    if real.size:
        assert np.allclose(half, np.fft.rfft(data, axis=2))
    backward()
    assert np.allclose(real / shape[2], data, atol=1e-14)
    with pytest.raises(ValueError, match="transform kind"):
        fft.AxisTransform(real, half, 2, "dst")


def test_cosine_transforms_diagonalise_the_second_difference_with_zero_gradient_ends():
    """DCT-II then DCT-III multiply by 2 n; the DCT-II of the Neumann second difference of
    f is its eigenvalue times the DCT-II of f, mode by mode."""
    n, spacing = 12, 0.3
    data = np.random.default_rng(1).standard_normal((n, 3, 2))
    values = fft.empty(data.shape, np.float64)
    forward = fft.AxisTransform(values, values, 0, "dct", "estimate")
    backward = fft.AxisTransform(values, values, 0, "idct", "estimate")
    ghosted = np.concatenate([data[:1], data, data[-1:]])  # zero gradient at both ends
    second = (ghosted[2:] - 2 * data + ghosted[:-2]) / spacing**2
    values[...] = data
    spectrum = forward().copy()
    values[...] = second
    eigen = fft.neumann_laplacian_eigenvalues(n, spacing)
    assert np.allclose(forward(), eigen[:, None, None] * spectrum, atol=1e-10)
    values[...] = spectrum
    assert np.allclose(backward() / (2 * n), data)


def test_grid_geometry_and_operator_bands():
    faces = tanh_faces(8, 2.0, 1.5)
    assert faces[0] == 0.0 and faces[-1] == pytest.approx(2.0)
    widths = np.diff(faces)
    assert widths[0] < widths[3] and np.allclose(widths, widths[::-1])
    grid = StaggeredGrid((4, 8, 4), (1.0, 2.0, 1.0), periodic_y=False, stretching=1.5)
    lower, diagonal, upper = grid.pressure_bands_y()
    assert lower[0] == 0.0 and upper[-1] == 0.0
    assert np.allclose(lower + diagonal + upper, 0.0)  # constants are in the nullspace
    # Conservation: the width-weighted column sums vanish (what leaves a cell enters the next).
    matrix = dense(lower, diagonal, upper, 0.0, False)
    assert np.allclose(widths @ matrix, 0.0)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"shape": (4, 0, 4), "lengths": (1, 1, 1)}, "3 positive integers"),
        ({"shape": (4, 4, 4), "lengths": (1, -1, 1)}, "3 positive numbers"),
        ({"shape": (4, 4, 4), "lengths": (1, 1, 1), "stretching": 1.0}, "must be uniform"),
        (
            {"shape": (4, 4, 4), "lengths": (1, 1, 1), "periodic_y": False, "stretching": -1},
            "stretching must be >= 0",
        ),
    ],
)
def test_grid_rejects_bad_input(arguments, message):
    with pytest.raises(ValueError, match=message):
        StaggeredGrid(**arguments)


def test_advection_converges_to_the_analytic_divergence_of_uu():
    from tachyflow.numerics.stencils import YMetrics, advection

    def max_error(n):
        h = 2 * np.pi / n
        grid = StaggeredGrid((n, n, n), (2 * np.pi,) * 3)
        centre = (np.arange(n) + 0.5) * h
        face = centre + 0.5 * h
        ghosted = lambda a: np.pad(a, 1, mode="wrap")  # noqa: E731
        x, y, z = np.meshgrid(centre, centre, centre, indexing="ij")
        xf, yf, zf = np.meshgrid(face, face, face, indexing="ij")
        u, v, w = (
            ghosted(np.sin(xf) + 0 * y),
            ghosted(np.sin(yf) + 0 * x),
            ghosted(np.sin(zf) + 0 * x),
        )
        result = [-a for a in advection(u, v, w, YMetrics.from_grid(grid), h, h)]
        exact = (
            np.sin(2 * xf) + np.sin(xf) * np.cos(y) + np.sin(xf) * np.cos(z),
            np.cos(x) * np.sin(yf) + np.sin(2 * yf) + np.sin(yf) * np.cos(z),
            np.cos(x) * np.sin(zf) + np.cos(y) * np.sin(zf) + np.sin(2 * zf),
        )
        return max(np.abs(r - e).max() for r, e in zip(result, exact, strict=True))

    coarse, fine = max_error(16), max_error(32)
    assert 3.8 < coarse / fine < 4.2


def test_factored_tridiagonal_matches_the_general_solver():
    from tachyflow.numerics.tdma import FactoredTridiagonal

    rng = np.random.default_rng(5)
    n = 9
    lower, upper = rng.uniform(0.1, 1.0, n), rng.uniform(0.1, 1.0, n)
    diagonal = 1.0 + lower + upper
    rhs = rng.standard_normal((4, n, 3))
    expected = solve_tridiagonal_lines(lower, diagonal, upper, rhs.copy())
    operator = FactoredTridiagonal(lower, diagonal, upper)
    result = operator.solve(rhs.copy())
    assert np.abs(result - expected).max() < 1e-14
    # The solution added to a field (a strided view of a ghosted array) in the same pass.
    ghosted = rng.standard_normal((6, n + 2, 5))
    before = ghosted.copy()
    source = rhs.copy()
    operator.solve(source, add_to=ghosted, at=(1, 1, 1))
    assert np.array_equal(ghosted[1:-1, 1:-1, 1:-1], before[1:-1, 1:-1, 1:-1] + result)
    assert np.array_equal(source, rhs)  # only read
    assert np.array_equal(ghosted[0], before[0]) and np.array_equal(ghosted[:, 0], before[:, 0])
    assert np.array_equal(ghosted[:, :, -1], before[:, :, -1])
    with pytest.raises(ValueError, match="does not fit"):
        operator.solve(rhs.copy(), add_to=ghosted, at=(1, 1, 3))
    with pytest.raises(ValueError, match="C-ordered"):
        operator.solve(rhs.copy(), add_to=ghosted[1:-1, 1:-1, 1:-1])
    # In place on a strided view (the cylindrical solver's lines).
    strided = ghosted.copy()[1:-1, 1:-1, 1:-1]
    strided[...] = rhs
    operator.solve(strided)
    assert np.abs(strided - expected).max() < 1e-14


def test_y_weighted_sum_equals_numpy_on_a_strided_view():
    from tachyflow.numerics.reductions import y_weighted_sum

    rng = np.random.default_rng(8)
    ghosted, weights = rng.standard_normal((6, 7, 8)), rng.uniform(size=5)
    values = ghosted[1:-1, 1:-1, 1:-1]
    expected = np.sum(values * weights[None, :, None])
    assert abs(y_weighted_sum(values, weights) - expected) < 1e-12 * np.abs(values).sum()
    with pytest.raises(ValueError, match="expected values"):
        y_weighted_sum(values, weights[:-1])


def test_convective_rate_and_finiteness_in_one_pass_equal_numpy_on_strided_views():
    from tachyflow.numerics.reductions import all_finite, convective_rate

    rng = np.random.default_rng(3)
    ghosted = [rng.standard_normal((7, 6, 11)) for _ in range(3)]  # 9 owned in z: a remainder
    u, v, w = (field[1:-1, 1:-1, 1:-1] for field in ghosted)
    widths = rng.uniform(0.5, 1.5, 4)
    expected = (np.abs(u) / 0.3 + np.abs(v) / widths[None, :, None] + np.abs(w) / 0.2).max()
    assert convective_rate(u, v, w, 0.3, widths, 0.2) == pytest.approx(expected, rel=1e-15)
    assert convective_rate(*(np.empty((0, 4, 9)),) * 3, 0.3, widths, 0.2) == 0.0  # empty piece
    assert all_finite(u) and all_finite(np.empty((0, 4, 9)))
    for place, value in itertools.product(
        [(0, 0, 0), (2, 3, 8), (4, 1, 5)], [np.nan, np.inf, -np.inf]
    ):
        spoilt = u.copy()
        spoilt[place] = value
        assert not all_finite(spoilt), (place, value)
        rate = convective_rate(spoilt, v, w, 0.3, widths, 0.2)
        assert np.isnan(rate) if np.isnan(value) else rate == np.inf
    with pytest.raises(ValueError, match="widths"):
        convective_rate(u, v, w, 0.3, widths[:-1], 0.2)
    with pytest.raises(ValueError, match="3D"):
        all_finite(u[0])


def test_energy_and_dot_sums_in_one_pass_equal_the_numpy_sums_bit_for_bit():
    from tachyflow.numerics.reductions import centred_energy_sum, y_weighted_dot, y_weighted_sum
    from tachyflow.numerics.stencils import shifted

    rng = np.random.default_rng(4)
    u, v, w = (rng.standard_normal((6, 5, 11)) for _ in range(3))  # 9 owned in z
    weights = rng.uniform(0.5, 1.5, 3)
    own = (slice(1, -1),) * 3
    centred = [
        (f[own] + shifted(f, **{axis: -1})) * 0.5
        for f, axis in zip((u, v, w), ("di", "dj", "dk"), strict=True)
    ]
    squares = centred[0] ** 2 + centred[1] ** 2 + centred[2] ** 2
    assert centred_energy_sum(u, v, w, weights) == y_weighted_sum(squares, weights)
    radii = rng.uniform(0.1, 1.0, 3)  # a cylindrical grid's q = r u_r, centred then divided
    squares = centred[0] ** 2 + (centred[1] / radii[None, :, None]) ** 2 + centred[2] ** 2
    assert centred_energy_sum(u, v, w, weights, radii) == y_weighted_sum(squares, weights)
    a, b = u[own], v[own]
    assert y_weighted_dot(a, b, weights) == y_weighted_sum(a * b, weights)
    with pytest.raises(ValueError, match="weights"):
        centred_energy_sum(u, v, w, weights[:-1])
    with pytest.raises(ValueError, match="one shape"):
        y_weighted_dot(a, b[:-1], weights)


def test_periodic_diffusion_solve_matches_dense_solves():
    from tachyflow.numerics.tdma import solve_periodic_diffusion

    rng = np.random.default_rng(4)
    rhs = rng.standard_normal((2, 3, 7))
    coupling = np.array([0.01, 3.0, 250.0])  # from nearly identity to the axis's stiffness
    expected = np.empty_like(rhs)
    for j, c in enumerate(coupling):
        matrix = dense(-c * np.ones(7), (1 + 2 * c) * np.ones(7), -c * np.ones(7), 0.0, True)
        for i in range(2):
            expected[i, j] = solve(matrix, rhs[i, j])
    result = solve_periodic_diffusion(rhs.copy(), coupling)
    assert np.abs(result - expected).max() < 1e-10
    with pytest.raises(ValueError, match="at least 3 unknowns"):
        solve_periodic_diffusion(np.zeros((1, 1, 2)), np.ones(1))


def test_rk3_increment_equals_its_numpy_statement():
    rng = np.random.default_rng(3)
    explicit, previous, implicit = (rng.standard_normal((3, 4, 5)) for _ in range(3))
    expected = 0.1 * (0.5 * explicit - 0.25 * previous) + 0.03 * implicit
    result = rk3_increment(0.1, 0.5, explicit, -0.25, previous, 0.03, implicit)
    assert result is implicit and np.allclose(result, expected, rtol=1e-15, atol=1e-15)
    with pytest.raises(ValueError, match="C-contiguous"):
        rk3_increment(0.1, 0.5, explicit[:, :, ::2], 0.0, explicit, 0.1, implicit)


@pytest.mark.parametrize("at_faces", [False, True])
def test_viscous_terms_split_in_one_pass_equal_the_separate_passes(at_faces):
    """``add_viscous(..., out_y=)`` (x-z terms added, y terms written apart, one pass)
    equals a pass of the x-z terms and one of the y terms on a stretched grid."""
    from tachyflow.numerics.stencils import YMetrics, add_viscous

    grid = StaggeredGrid((5, 7, 4), (1.0, 2.0, 1.5), periodic_y=False, stretching=1.5)
    metrics = YMetrics.from_grid(grid)
    rng = np.random.default_rng(6)
    field = rng.standard_normal((7, 9, 6))
    start = rng.standard_normal((5, 7, 4))
    xz = add_viscous(field, metrics, 0.2, 0.3, 0.7, start.copy(), y=False, at_faces=at_faces)
    y = add_viscous(
        field, metrics, 0.2, 0.3, 0.7, np.zeros_like(start), x_and_z=False, at_faces=at_faces
    )
    together, apart = start.copy(), np.full_like(start, np.nan)
    add_viscous(field, metrics, 0.2, 0.3, 0.7, together, at_faces=at_faces, out_y=apart)
    assert np.array_equal(together, xz) and np.array_equal(apart, y)
    with pytest.raises(ValueError, match="out_y has shape"):
        add_viscous(field, metrics, 0.2, 0.3, 0.7, together, out_y=apart[:, :-1])


def test_divergence_pass_sums_the_rows_and_gradient_pass_shifts_them():
    """The flow-rate force's parts: the divergence pass's row sums give the bulk exactly as
    ``y_weighted_sum`` does; the gradient pass's shift equals adding the rows afterwards."""
    from tachyflow.numerics.grid import StaggeredGrid
    from tachyflow.numerics.reductions import weighted_rows_total, y_weighted_sum
    from tachyflow.numerics.stencils import YMetrics, divergence, subtract_gradient

    rng = np.random.default_rng(12)
    grid = StaggeredGrid((4, 6, 7), (1.0, 2.0, 1.5), periodic_y=False, stretching=1.2)
    # 7 z cells: not a multiple of the four partial sums
    metrics = YMetrics.from_grid(grid)
    u, v, w, p = (rng.standard_normal((6, 8, 9)) for _ in range(4))
    weights = rng.uniform(size=6)
    rows = np.full((4, 6), np.nan)
    plain = divergence(u, v, w, metrics, 0.25, 0.2, 0.5)
    assert np.array_equal(divergence(u, v, w, metrics, 0.25, 0.2, 0.5, rows=rows), plain)
    interior = u[1:-1, 1:-1, 1:-1]
    assert np.allclose(rows, interior.sum(axis=2), rtol=1e-14, atol=1e-14)
    assert weighted_rows_total(rows, weights) == y_weighted_sum(interior, weights)
    with pytest.raises(ValueError, match=r"rows must be C-ordered of shape \(4, 6\)"):
        divergence(u, v, w, metrics, 0.25, 0.2, rows=rows[:, :-1])
    shift = rng.standard_normal(6)
    separate = [field.copy() for field in (u, v, w)]
    subtract_gradient(*separate, p, metrics, 0.25, 0.2, 0.3, True)
    separate[0][1:-1, 1:-1, 1:-1] += shift[None, :, None]
    subtract_gradient(u, v, w, p, metrics, 0.25, 0.2, 0.3, True, shift)
    for together, apart in zip((u, v, w), separate, strict=True):
        assert np.array_equal(together, apart)
    with pytest.raises(ValueError, match=r"shift must have shape \(6,\)"):
        subtract_gradient(u, v, w, p, metrics, 0.25, 0.2, 0.3, True, shift[1:])
    # The potential added to the step's pressure in the same pass, numpy's bits: summed,
    # or replacing the last step's (fresh), into the owned cells of a ghosted array.
    pressure = rng.standard_normal(p.shape)
    total = pressure[1:-1, 1:-1, 1:-1]
    expected = pressure.copy()
    expected[1:-1, 1:-1, 1:-1] += 0.37 * p[1:-1, 1:-1, 1:-1]
    before = [field.copy() for field in (u, v, w)]
    subtract_gradient(u, v, w, p, metrics, 0.25, 0.2, 0.3, True, None, total, 0.37)
    assert np.array_equal(pressure, expected)
    subtract_gradient(*before, p, metrics, 0.25, 0.2, 0.3, True)
    for together, apart in zip((u, v, w), before, strict=True):
        assert np.array_equal(together, apart)
    expected[1:-1, 1:-1, 1:-1] = 0.37 * p[1:-1, 1:-1, 1:-1]
    subtract_gradient(u, v, w, p, metrics, 0.25, 0.2, 0.3, True, None, total, 0.37, fresh=True)
    assert np.array_equal(pressure, expected)
    with pytest.raises(ValueError, match=r"total must be a float64 array of shape \(4, 6, 7\)"):
        subtract_gradient(u, v, w, p, metrics, 0.25, 0.2, 0.3, True, None, total[1:], 0.37)


def test_velocity_terms_components_are_c_ordered_and_staggered_off_4k_multiples():
    from tachyflow.numerics.velocity_update import TERMS_STAGGER, velocity_terms

    for shape in ((64, 128, 128), (3, 5, 7), (0, 4, 4)):
        terms = velocity_terms(shape)
        assert terms.shape == (3, *shape)
        starts = [component.ctypes.data for component in terms]
        for component in terms:
            assert component.flags.c_contiguous and component.flags.writeable
            assert component.ctypes.data % 64 == 0  # a cache line
        # Each component apart from the one before by TERMS_STAGGER past a page multiple;
        # no two overlap.
        for before, after in itertools.pairwise(starts):
            assert (after - before) % 4096 == TERMS_STAGGER
            assert after - before >= 8 * int(np.prod(shape))
        terms[...] = np.arange(terms.size).reshape(terms.shape)
        assert np.array_equal(terms.ravel(), np.arange(terms.size))


@pytest.mark.parametrize("walls", [True, False])
def test_fused_velocity_update_equals_the_separate_kernels_in_any_runs_of_planes(walls):
    # Each run of x-planes holds back its first and last planes until every run is done
    # (the runs beside read their old values): runs of one plane each, and more runs than
    # planes (empty ones), must give the same bits as one run and as the separate passes.
    from tachyflow.numerics import stencils
    from tachyflow.numerics.tdma import FactoredTridiagonal
    from tachyflow.numerics.velocity_update import (
        advance_velocity,
        divergence_of_planes,
        planes_left_by_advance,
        velocity_planes,
        velocity_terms,
    )

    rng = np.random.default_rng(11)
    nx, ny, nz = 5, 7, 6
    grid = StaggeredGrid((nx, ny, nz), (2.0, 1.0, 1.5), periodic_y=not walls,
                         stretching=1.5 if walls else 0.0)
    metrics = stencils.YMetrics.from_grid(grid)
    dx, dz, nu, forcing, dt, gamma, rho, alpha_dt = 0.4, 0.25, 0.03, 0.7, 0.01, 0.4, -0.2, 0.002
    fields = [rng.standard_normal((nx + 2, ny + 2, nz + 2)) for _ in range(3)]
    if walls:
        fields[1][:, 0] = 0.0  # v's lower wall face, as the boundaries leave it
    previous = rng.standard_normal((3, nx, ny, nz))
    bands = [(rng.uniform(-0.2, -0.1, ny), rng.uniform(1.3, 1.5, ny),
              rng.uniform(-0.2, -0.1, ny)) for _ in range(2)]
    operators = tuple(FactoredTridiagonal(*b) for b in bands) if walls else None

    # The reference: the separate passes.
    explicit = np.zeros_like(previous)
    implicit = np.zeros_like(previous)
    stencils.advection(*fields, metrics, dx, dz, out=explicit)
    for index, field in enumerate(fields):
        stencils.add_viscous(field, metrics, dx, dz, nu, explicit[index], at_faces=index == 1,
                             out_y=implicit[index] if walls else None)
    explicit[0] += forcing
    expected = [field.copy() for field in fields]
    for index, field in enumerate(expected):
        increment = rk3_increment(dt, gamma, explicit[index], rho, previous[index], alpha_dt,
                                  implicit[index])
        if walls:
            operators[index == 1].solve(increment, field, at=(1, 1, 1))
        else:
            field[1:-1, 1:-1, 1:-1] += increment

    for runs in (1, 2, nx, nx + 2):
        updated = [field.copy() for field in fields]
        # A plain array, and the solver's (components 4K-staggered: the same values).
        terms = previous.copy() if runs % 2 else velocity_terms((nx, ny, nz))
        terms[...] = previous
        planes = velocity_planes((nx, ny, nz), runs)
        advance_velocity(*updated, metrics, dx, dz, nu, forcing, dt, gamma, rho,
                         alpha_dt, terms, operators, planes)
        assert np.array_equal(terms, explicit), runs
        for result, reference in zip(updated, expected, strict=True):
            assert np.array_equal(result, reference), runs
    # The projection's divergence (and the bulk's rows) in the same pass: the values of the
    # updated fields once the boundaries are applied, but on the planes left to after the
    # exchange and, where z's ghosts come from elsewhere, the first z cells.
    if walls:
        expected[1][:, -2:] = 0.0  # the upper wall face (the lower one is 0 throughout)
    else:
        expected[1][:, 0] = expected[1][:, -2]
    for z_wraps in (True, False):
        bounded = [field.copy() for field in expected]
        if z_wraps:
            bounded[2][:, :, 0] = bounded[2][:, :, -2]
        reference_rows = np.empty((nx, ny))
        reference = stencils.divergence(*bounded, metrics, dx, dz, 1.7, rows=reference_rows)
        first = 0 if z_wraps else 1
        for runs in (1, 2, nx):
            updated = [field.copy() for field in fields]
            divergence, rows = np.full((nx, ny, nz), np.nan), np.full((nx, ny), np.nan)
            advance_velocity(
                *updated, metrics, dx, dz, nu, forcing, dt, gamma, rho, alpha_dt,
                previous.copy(), operators, velocity_planes((nx, ny, nz), runs),
                divergence, 1.7, rows, z_wraps,
            )
            left = planes_left_by_advance(nx, runs)
            taken = [plane for plane in range(nx) if plane not in left]
            assert taken or runs > 1
            assert np.array_equal(divergence[taken, :, first:], reference[taken, :, first:])
            assert np.array_equal(rows[taken], reference_rows[taken])
            # The planes left, from the owned values and the ghosts below (u's in x).
            divergence_of_planes(*updated, metrics, dx, dz, 1.7, walls, z_wraps,
                                 left, divergence, rows)
            assert np.array_equal(divergence, reference) and np.array_equal(rows, reference_rows)
    with pytest.raises(ValueError, match=r"planes must be owned x-planes 0\.\.4"):
        divergence_of_planes(*fields, metrics, dx, dz, 1.0, walls, True, [5],
                             np.empty((nx, ny, nz)))
    assert planes_left_by_advance(5, 1) == [0, 1, 4]
    assert planes_left_by_advance(5, 2) == [0, 1, 2, 3, 4]
    # The first substep reads no previous terms.
    terms = np.full_like(previous, np.nan)
    advance_velocity(*[f.copy() for f in fields], metrics, dx, dz, nu, forcing, dt,
                     gamma, 0.0, alpha_dt, terms, operators)
    assert np.array_equal(terms, explicit)

    with pytest.raises(ValueError, match="planes has shape"):
        advance_velocity(*fields, metrics, dx, dz, nu, forcing, dt, gamma, rho,
                         alpha_dt, previous.copy(), operators,
                         np.empty((3, 1, 3, ny, nz + 1)))
    with pytest.raises(ValueError, match="terms has shape"):
        advance_velocity(*fields, metrics, dx, dz, nu, forcing, dt, gamma, rho,
                         alpha_dt, previous[:, 1:], operators)
    with pytest.raises(ValueError, match="runs must be at least 1"):
        velocity_planes((nx, ny, nz), 0)
    short = FactoredTridiagonal(*(band[1:] for band in bands[0]))
    with pytest.raises(ValueError, match="the implicit operators must have 7 rows"):
        advance_velocity(*fields, metrics, dx, dz, nu, forcing, dt, gamma, rho,
                         alpha_dt, previous.copy(), (short, short))

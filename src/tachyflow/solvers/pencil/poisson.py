"""Direct pressure Poisson solver: FFT in x and z, tridiagonal solves in y (as in Kwon, Park
& Choi, and CaNS).

The discrete operator is the second-order finite-volume Laplacian of the staggered grid
(:class:`~tachyflow.numerics.grid.StaggeredGrid`): periodic and uniform in x and z,
periodic or walled (zero normal gradient) and possibly stretched in y. A real FFT in z
and a complex FFT in x diagonalise the x and z parts exactly (modified wavenumbers),
leaving one tridiagonal system in y per Fourier mode; the solve inverts the discrete
operator to round-off. A grid open in x (``periodic_x`` false: an inflow and an outflow,
zero gradient at both ends) takes a cosine transform (DCT-II) in x instead of the FFT,
applied to the real and imaginary parts of the z spectrum alike; an open x refined round
a zone (``grid.uniform_x`` false) takes the eigen-decomposition of its non-uniform x
operator instead (computed once: :func:`~tachyflow.numerics.fft.stretched_neumann_eigenpairs`),
a dense matrix product per line through BLAS, the solve otherwise the same.

Data flow, for fields held as y-pencils (the half spectrum in z, ``nz // 2 + 1`` modes,
has a decomposition of its own with the same process grid)::

    y-pencil [y→z] r2c z [z→y] --y→x--> c2c x --x→y--> TDMA in y (complex lines)
             [z→y] c2r z [y→z] <--x→y-- c2c x <--y→x--

The real transform runs along z, the contiguous axis, where it is cheapest and after
which half the data is left. A transform whose axis is already whole in the y-pencil
(``p_col == 1`` for z, ``p_row == 1`` for x: every slab decomposition) is done there
and its two transposes are skipped. On a ``p_row × 1`` grid (x split, z whole) the
spectrum goes instead to z-slabs, x and y both whole (one exchange over all ranks), where
the x transforms and the y solves are all local::

    y-pencil r2c z --y→slab--> c2c x, TDMA in y, c2c x --slab→y--> c2r z

two exchanges per solve instead of four (``slabs``; where every rank gets z-modes). A slab
holds its axes as (y, x, z): the x transforms stride over a row of z-modes, not a whole
(y, z) plane (about twice as fast), and the y solves take a few x-modes' z-modes as one
row (:func:`line_block`). Where every rank is on one node the two exchanges read the peers'
blocks straight from their shared memory (``Transposer(shared=True)``).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from tachyflow.numerics import fft
from tachyflow.numerics.fft import AxisTransform
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.tdma import solve_tridiagonal_lines
from tachyflow.parallel import PencilDecomposition, Transposer, split_bounds
from tachyflow.parallel.shared_memory import on_one_node
from tachyflow.parallel.transpose import TransposeRequest, pipelined

# Modes side by side in a slab's y solves: rows of at least this many (a row of each
from tachyflow.solvers.phase_clock import PhaseClock

# x-mode's few z-modes alone is too short a loop to run fast).
LINE_ROW = 128


def line_block(nx: int, modes: int) -> int:
    """How many x-modes of a slab (held as (y, x, z)) to solve side by side: the least
    divisor of ``nx`` giving rows of at least :data:`LINE_ROW` values (all ``nx``, if
    none)."""
    return next((b for b in range(1, nx + 1) if nx % b == 0 and b * modes >= LINE_ROW), nx)


@dataclass
class _Lines:
    """The tridiagonal systems in y of a block of Fourier modes: the complex array whose
    axis 1 they run along, each line's diagonal shift(s) and which line is pinned (the
    singular zero mode, ``zero_mode`` its index, where the block holds it)."""

    values: np.ndarray
    shift: np.ndarray
    pinned: np.ndarray
    scaled_shift: np.ndarray | None
    zero_mode: tuple | None


@dataclass
class _Window:
    """The plans of one window of the overlapped solve (see ``PoissonSolver(overlap)``)."""

    spectral: Transposer
    forward: AxisTransform
    backward: AxisTransform
    real: Transposer | None = None
    z_real: np.ndarray | None = None  # the window's pieces of the z-pencils
    z_spectrum: np.ndarray | None = None
    x_spectrum: np.ndarray | None = None  # the window's x-pencil
    lines: _Lines | None = None


class PoissonSolver:
    """Solves ``∇² p = f`` for fields distributed as y-pencils.

    Parameters
    ----------
    decomposition : PencilDecomposition
        Its global shape must equal the grid's.
    grid : StaggeredGrid or CylindricalGrid
        Geometry and y boundary (periodic or walls); on a cylindrical grid (x, r, θ) the
        operator is the cylindrical Laplacian, with no flux through the axis.
    transposer : Transposer, optional
        A float64 transposer of ``decomposition`` to share; one is made if not given.
    planning : {"estimate", "measure", "patient"}
        FFTW planning effort, spent once at construction.
    overlap : bool
        Overlap transposes with computation: the data of each transpose stage is cut into
        ``chunks`` windows along the axis it leaves alone (x-planes for y↔z, z-planes for
        x↔y), and one window travels while another is transformed or solved
        (:func:`~tachyflow.parallel.transpose.pipelined`). The same lines go through the
        same transforms: the result equals the blocking solve's to round-off. The
        attribute may be changed between solves (the windows are planned at the first
        overlapped one), and ``progress_calls`` (False) makes MPI test the transfers
        between the stages. Off by default: slower where measured (2 shared cores,
        docs/benchmarks.md).
    chunks : int
        Windows per stage with ``overlap`` (at most the local extent of their axis).
    solution : numpy.ndarray, optional
        Where :meth:`solve` will be asked to write (``out=``): a y-pencil, which may be a
        view such as the owned cells of a ghosted field. Where z is whole in a y-pencil
        the last transform is planned to write there directly (fastest where its first
        element is SIMD-aligned, as :meth:`~tachyflow.parallel.HaloExchange.allocate`
        makes them); elsewhere, and for any other ``out``, the solution is copied in.
    slabs : bool
        On a ``p_row × 1`` grid with at least ``p_row`` z-modes, take the spectrum to
        z-slabs for the x transforms and the y solves (see the module docstring; the same
        lines through the same transforms: equal to the pencil path to round-off). The
        attribute says whether a blocking solve uses them and may be set False between
        solves (the pencil path stays planned); an overlapped one (``overlap``) keeps its
        windows of pencil transposes.

    Attributes
    ----------
    work : numpy.ndarray
        A y-pencil of the solver's own: see :meth:`solve`.

    Notes
    -----
    Construction is collective (it builds the spectral decomposition's communicators);
    so are :meth:`solve` and :meth:`free`. With walls or a periodic y the operator is
    singular (constant nullspace): the solve returns the solution with zero volume
    average, and the average of the right-hand side is ignored.
    """

    def __init__(
        self,
        decomposition: PencilDecomposition,
        grid: StaggeredGrid,
        transposer: Transposer | None = None,
        planning: str = "measure",
        overlap: bool = False,
        chunks: int = 2,
        slabs: bool = True,
        solution: np.ndarray | None = None,
    ):
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
            raise ValueError(f"chunks must be an integer >= 1, got {chunks!r}")
        if tuple(decomposition.global_shape) != tuple(grid.shape):
            raise ValueError(
                f"decomposition shape {decomposition.global_shape} differs from grid shape "
                f"{grid.shape}"
            )
        if grid.periodic_y and grid.shape[1] < 3:
            raise ValueError(f"a periodic y needs at least 3 cells, got {grid.shape[1]}")
        self.decomposition = decomposition
        self.grid = grid
        self.timer = PhaseClock()
        nx, ny, nz = grid.shape
        # A stretched x: the matrices of its eigen-decomposition, for every x transform.
        self._x_eigenpairs = (
            None if grid.uniform_x else fft.stretched_neumann_eigenpairs(grid.widths_x)
        )
        self.real_transposer = transposer or Transposer(decomposition, np.float64)
        self.spectral = PencilDecomposition(
            (nx, ny, fft.half_spectrum_length(nz)), decomposition.proc_grid, decomposition.comm
        )
        self.x_whole = decomposition.p_row == 1
        self.z_whole = decomposition.p_col == 1
        # z-slabs where z is whole, x split and every rank gets z-modes.
        slabs_fit = self.z_whole and not self.x_whole
        slabs_fit = slabs_fit and self.spectral.global_shape[2] >= decomposition.p_row
        # On one node the slab exchanges pull from the peers' shared memory.
        shared = slabs_fit and on_one_node(decomposition.comm)
        self.complex_transposer = Transposer(
            self.spectral, np.complex128, slabs=slabs_fit, shared=shared
        )
        expected = decomposition.local_shape("y")
        if solution is not None and (
            not isinstance(solution, np.ndarray)
            or solution.shape != expected
            or solution.dtype != np.float64
        ):
            raise ValueError(
                f"solution must be a float64 y-pencil of shape {expected}, got "
                f"{getattr(solution, 'dtype', type(solution).__name__)} "
                f"{getattr(solution, 'shape', '')}"
            )
        self._plan(planning, solution)
        if not isinstance(slabs, bool):
            raise TypeError(f"slabs must be True or False, got {slabs!r}")
        self._slabs = slabs and slabs_fit

        # FFTW does not normalise: scaling the operator by the transforms' factor (nx nz, or
        # 2 nx nz with the cosine transform in x, nz with the orthogonal dense one) instead
        # costs nothing.
        if self._x_eigenpairs is not None:
            scale, eigen_x = float(nz), self._x_eigenpairs[0]
        elif grid.periodic_x:
            scale = float(nx * nz)
            eigen_x = fft.laplacian_eigenvalues(nx, grid.spacing_x)
        else:
            scale = 2.0 * nx * nz
            eigen_x = fft.neumann_laplacian_eigenvalues(nx, grid.spacing_x)
        lower, diagonal, upper = grid.pressure_bands_y()
        self.bands = (scale * lower, scale * diagonal, scale * upper)
        eigen_z = fft.laplacian_eigenvalues(nz, grid.spacing_z, fft.half_spectrum_length(nz))
        self._eigenvalues = (scale, eigen_x, eigen_z)
        # A cylindrical grid weights the θ eigenvalue by 1/r² row by row: a second shift.
        self.azimuthal_weights = grid.azimuthal_weights_y
        pencil = self.spectral.pencils["y"]
        (x0, _, z0), (x1, _, z1) = pencil.start, pencil.stop
        self.lines = self._lines(self.y_spectrum, (x0, x1), (z0, z1))
        if slabs_fit:
            bounds = self.spectral.axis_bounds(2, "row")
            row = decomposition.row
            modes = int(bounds[row + 1] - bounds[row])
            # A slab holds (y, x, z): its lines, x-planes of ``block`` x side by side.
            block = line_block(nx, modes)
            values = self.slab_spectrum.reshape(ny, nx // block, block * modes)
            self.slab_lines = self._lines(
                values.transpose(1, 0, 2), (0, nx), bounds[row : row + 2], block
            )
        self.volume_weights = grid.volume_weights_y
        self.overlap = bool(overlap)
        self.progress_calls = False
        self._window_plan = (chunks, planning)  # planned at the first overlapped solve
        self._x_windows: list[_Window] | None = None
        self._z_windows: list[_Window] | None = None

    @property
    def slabs(self) -> bool:
        """Whether the solve takes the spectrum to z-slabs (see the class)."""
        return self._slabs

    @slabs.setter
    def slabs(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"slabs must be True or False, got {value!r}")
        if value and not self.complex_transposer.slabs:
            grid = self.decomposition.proc_grid
            raise ValueError(
                f"z-slabs need a p_row x 1 grid with p_row > 1 and at least p_row z-modes, "
                f"got a {grid[0]}x{grid[1]} grid and {self.spectral.global_shape[2]} modes"
            )
        self._slabs = value

    def _lines(self, values: np.ndarray, x_range, z_range, block: int = 1) -> _Lines:
        """The systems of the modes ``x_range`` × ``z_range`` (global indices), held in
        ``values`` (lines along axis 1; with ``block``, ``block`` x-modes side by side
        along its last axis)."""
        (x0, x1), (z0, z1) = (tuple(int(end) for end in ends) for ends in (x_range, z_range))
        scale, eigen_x, eigen_z = self._eigenvalues
        if self.azimuthal_weights is None:
            shift, scaled = scale * np.add.outer(eigen_x[x0:x1], eigen_z[z0:z1]), None
        else:
            shift = scale * np.add.outer(eigen_x[x0:x1], np.zeros(z1 - z0))
            scaled = scale * np.add.outer(np.zeros(x1 - x0), eigen_z[z0:z1])
        # The (kx, kz) = (0, 0) line is singular (constant nullspace): pin it.
        pinned = np.zeros(shift.shape, dtype=bool)
        zero_mode = None
        if x0 == 0 and z0 == 0 and x1 > 0 and z1 > 0:
            pinned[0, 0] = True
            zero_mode = (0, slice(None), 0)
        shape = ((x1 - x0) // block, block * (z1 - z0))
        shift, pinned = shift.reshape(shape), pinned.reshape(shape)
        scaled = None if scaled is None else scaled.reshape(shape)
        return _Lines(values, shift, pinned, scaled, zero_mode)

    def _plan(self, planning: str, solution: np.ndarray | None) -> None:
        """Allocate the work arrays once and plan the four FFTs on them (and the last
        into ``solution`` where z is whole)."""
        spectral, real = self.spectral, self.decomposition
        shared = self.complex_transposer.shared
        self.y_spectrum = (
            self.complex_transposer.shared_array("y")
            if shared
            else fft.empty(spectral.local_shape("y"), np.complex128)
        )
        if self.z_whole:
            self.z_real = fft.empty(real.local_shape("y"), np.float64)
            self.z_spectrum = self.y_spectrum
            self.work = self.z_real  # the z transforms read and write it
        else:
            self.work = fft.empty(real.local_shape("y"), np.float64)
            self.z_real = fft.empty(real.local_shape("z"), np.float64)
            self.z_spectrum = fft.empty(spectral.local_shape("z"), np.complex128)
        self.x_spectrum = (
            self.y_spectrum
            if self.x_whole
            else fft.empty(spectral.local_shape("x"), np.complex128)
        )
        self.z_forward = AxisTransform(self.z_real, self.z_spectrum, 2, "r2c", planning)
        self.z_backward = AxisTransform(self.z_spectrum, self.z_real, 2, "c2r", planning)
        # Planning may overwrite the solution's array: it holds nothing yet.
        self._solution = solution
        self._z_backward_to_solution = None
        if self.z_whole and solution is not None:
            self._z_backward_to_solution = AxisTransform(
                self.z_spectrum, solution, 2, "c2r", planning
            )
        self.x_forward, self.x_backward = self._x_transforms(self.x_spectrum, 0, planning)
        if self.complex_transposer.slabs:
            shape = self.complex_transposer.local_shape("slab")
            self.slab_spectrum = (
                self.complex_transposer.shared_array("slab")
                if shared
                else fft.empty(shape, np.complex128)
            )
            self.slab_forward, self.slab_backward = self._x_transforms(
                self.slab_spectrum, 1, planning
            )

    def _x_transforms(self, spectrum: np.ndarray, axis: int, planning: str):
        """The forward and backward x transforms of a complex ``spectrum`` along ``axis``,
        in place: the FFT of a periodic x; with an open one the cosine transform (or, x
        stretched, the dense eigenvector products) of the real and imaginary parts, side by
        side in z."""
        if self.grid.periodic_x:
            return (AxisTransform(spectrum, spectrum, axis, "forward", planning),
                    AxisTransform(spectrum, spectrum, axis, "backward", planning))
        data = spectrum.view(np.float64)
        if self._x_eigenpairs is not None:
            _, forward, backward = self._x_eigenpairs
            return (fft.DenseAxisTransform(data, axis, forward),
                    fft.DenseAxisTransform(data, axis, backward))
        return (AxisTransform(data, data, axis, "dct", planning),
                AxisTransform(data, data, axis, "idct", planning))

    def _plan_windows(self, chunks: int, planning: str) -> None:
        """The overlapped solve's plans: per window a transposer of each exchange, the
        transforms and the tridiagonal operands of its lines (local; planning may
        overwrite the work arrays, which hold nothing between solves)."""
        local_x, _, local_z = self.spectral.local_shape("y")
        # Windows of the y↔z stages: x-planes (the same on every rank of a row), pieces of
        # the z-pencils.
        self._x_windows = []
        if not self.z_whole:
            bounds = split_bounds(local_x, max(1, min(chunks, local_x)))
            for start, stop in itertools.pairwise(bounds):
                window = (0, int(start), int(stop))
                z_real, z_spectrum = self.z_real[start:stop], self.z_spectrum[start:stop]
                self._x_windows.append(
                    _Window(
                        real=Transposer(self.decomposition, np.float64, window=window),
                        spectral=Transposer(self.spectral, np.complex128, window=window),
                        forward=AxisTransform(z_real, z_spectrum, 2, "r2c", planning),
                        backward=AxisTransform(z_spectrum, z_real, 2, "c2r", planning),
                        z_real=z_real,
                        z_spectrum=z_spectrum,
                    )
                )
        # Windows of the x↔y stages: z-planes (the same on every rank of a column), each
        # an x-pencil array of its own (so that it is sent and received in place), in the
        # memory of the blocking solve's x-pencil.
        self._z_windows = []
        pencil = self.spectral.pencils["y"]
        (x0, _, z0), (x1, _, _) = pencil.start, pencil.stop
        if not self.x_whole:
            bounds = split_bounds(local_z, max(1, min(chunks, local_z)))
            memory = self.x_spectrum.reshape(-1)
            for start, stop in itertools.pairwise(bounds):
                transposer = Transposer(
                    self.spectral, np.complex128, window=(2, int(start), int(stop))
                )
                shape = transposer.local_shape("x")
                offset = int(np.prod(self.x_spectrum.shape[:2])) * int(start)
                x_spectrum = memory[offset : offset + int(np.prod(shape))].reshape(shape)
                planes = slice(start, stop)
                forward, backward = self._x_transforms(x_spectrum, 0, planning)
                self._z_windows.append(
                    _Window(
                        spectral=transposer,
                        forward=forward,
                        backward=backward,
                        x_spectrum=x_spectrum,
                        lines=self._lines(
                            self.y_spectrum[:, :, planes], (x0, x1), (z0 + start, z0 + stop)
                        ),
                    )
                )

    def _move(self, transposer: Transposer, array, source: str, target: str, out) -> None:
        with self.timer("transpose"):
            transposer.transpose(array, source, target, out=out)

    def _fft(self, transform: AxisTransform) -> None:
        with self.timer("fft"):
            transform()

    def solve(self, rhs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Return ``p`` with ``∇² p = rhs``; both are y-pencils (collective).

        ``rhs`` is left unchanged, unless it is :attr:`work`. Writes into ``out`` if given.
        A right-hand side computed into :attr:`work` and the solution asked there
        (``solve(work, out=work)``) cost no copy in or out where z is whole in the
        y-pencil: the z transforms read and write that array.
        """
        expected = self.decomposition.local_shape("y")
        if not isinstance(rhs, np.ndarray) or rhs.shape != expected or rhs.dtype != np.float64:
            raise ValueError(
                f"rhs must be a float64 y-pencil of shape {expected}, got "
                f"{getattr(rhs, 'dtype', type(rhs).__name__)} {getattr(rhs, 'shape', '')}"
            )
        out = np.empty(expected) if out is None else out
        if self.overlap and self._x_windows is None:
            self._plan_windows(*self._window_plan)
        if self.z_whole:
            if rhs is not self.z_real:
                np.copyto(self.z_real, rhs)
            self._fft(self.z_forward)
        elif self.overlap:
            self._pipeline(self._x_windows, self._forward_z_stages(rhs))
        else:
            self._move(self.real_transposer, rhs, "y", "z", self.z_real)
            self._fft(self.z_forward)
            self._move(self.complex_transposer, self.z_spectrum, "z", "y", self.y_spectrum)
        if self.overlap and not self.x_whole:
            self._pipeline(self._z_windows, self._x_stages())
        elif self.slabs:
            self._move(self.complex_transposer, self.y_spectrum, "y", "slab", self.slab_spectrum)
            self._fft(self.slab_forward)
            self._solve_lines(self.slab_lines)
            self._fft(self.slab_backward)
            self._move(self.complex_transposer, self.slab_spectrum, "slab", "y", self.y_spectrum)
        else:
            self._transform_x(self.x_forward)
            self._solve_lines(self.lines)
            self._transform_x(self.x_backward)
        if self.z_whole and self._is_solution(out):
            self._fft(self._z_backward_to_solution)
        elif self.z_whole:
            self._fft(self.z_backward)
            if out is not self.z_real:
                np.copyto(out, self.z_real)
        else:
            # The transposes write C-ordered arrays only: a view is copied into.
            moved = out if out.flags.c_contiguous else self.work
            if self.overlap:
                self._pipeline(self._x_windows, self._backward_z_stages(moved))
            else:
                self._move(self.complex_transposer, self.y_spectrum, "y", "z", self.z_spectrum)
                self._fft(self.z_backward)
                self._move(self.real_transposer, self.z_real, "z", "y", moved)
            if moved is not out:
                np.copyto(out, moved)
        return out

    def _is_solution(self, out: np.ndarray) -> bool:
        """Whether ``out`` is the planned solution's memory (the same view, or another of
        it: a ghosted field's owned cells are a fresh view each time)."""
        solution = self._solution
        return solution is not None and (
            out is solution
            or (
                out.__array_interface__["data"][0] == solution.__array_interface__["data"][0]
                and out.strides == solution.strides
            )
        )

    def _solve_lines(self, lines: _Lines) -> None:
        """The tridiagonal systems in y of a block of Fourier modes."""
        with self.timer("tdma"):
            solve_tridiagonal_lines(
                *self.bands,
                lines.values,
                lines.shift,
                lines.pinned,
                periodic=self.grid.periodic_y,
                scaled=lines.scaled_shift,
                weights=self.azimuthal_weights,
            )
            if lines.zero_mode is not None:
                line = lines.values[lines.zero_mode]
                line -= np.dot(line, self.volume_weights)

    # -- the overlapped solve: stages of pipelined(), one call per window ---------------------

    def _pipeline(self, windows, stages) -> None:
        pipelined(
            len(windows),
            [functools.partial(stage, windows) for stage in stages],
            progress=self.progress_calls,
            waiting=lambda: self.timer("transpose"),
        )

    def _start(self, transposer: Transposer, array, source, target, out) -> TransposeRequest:
        with self.timer("transpose"):
            return transposer.start(array, source, target, out=out)

    def _forward_z_stages(self, rhs):
        def to_z(windows, index):
            return self._start(windows[index].real, rhs, "y", "z", windows[index].z_real)

        def transform_and_back(windows, index):
            window = windows[index]
            self._fft(window.forward)
            return self._start(window.spectral, window.z_spectrum, "z", "y", self.y_spectrum)

        return to_z, transform_and_back

    def _x_stages(self):
        def to_x(windows, index):
            window = windows[index]
            return self._start(window.spectral, self.y_spectrum, "y", "x", window.x_spectrum)

        def transform_and_back(transform):
            def stage(windows, index):
                window = windows[index]
                self._fft(getattr(window, transform))
                return self._start(window.spectral, window.x_spectrum, "x", "y", self.y_spectrum)

            return stage

        def solve_and_to_x(windows, index):
            self._solve_lines(windows[index].lines)
            return to_x(windows, index)

        return to_x, transform_and_back("forward"), solve_and_to_x, transform_and_back("backward")

    def _backward_z_stages(self, out):
        def to_z(windows, index):
            window = windows[index]
            return self._start(window.spectral, self.y_spectrum, "y", "z", window.z_spectrum)

        def transform_and_back(windows, index):
            window = windows[index]
            self._fft(window.backward)
            return self._start(window.real, window.z_real, "z", "y", out)

        return to_z, transform_and_back

    def _transform_x(self, transform: AxisTransform) -> None:
        if self.x_whole:
            self._fft(transform)
            return
        self._move(self.complex_transposer, self.y_spectrum, "y", "x", self.x_spectrum)
        self._fft(transform)
        self._move(self.complex_transposer, self.x_spectrum, "x", "y", self.y_spectrum)

    def free(self) -> None:
        """Release the spectral decomposition's communicators and the shared memory of
        its exchanges (collective)."""
        self.complex_transposer.free()
        self.spectral.free()

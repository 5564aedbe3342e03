"""NAS Parallel Benchmark FT (NPB 3.4.2): a 3D FFT PDE solver, verified by NPB's checksums.

FT solves ``du/dt = α ∇²u`` spectrally on an ``nx × ny × nz`` periodic grid. As in NPB's
``ft.f90``:

1. the initial field ``u`` is complex, drawn from NPB's generator (seed 314159265,
   multiplier 5^13): with Fortran's x-fastest ordering, element ``(x, y, z)`` takes draws
   ``2 m + 1`` (real) and ``2 m + 2`` (imaginary) of the stream, ``m = x + nx (y + ny z)``;
   each rank jumps ahead to its first plane and then from z-plane to z-plane;
2. a forward 3D FFT with NPB's sign, ``exp(+2πi jk/n)``, unnormalised;
3. each iteration multiplies the spectrum in place by
   ``exp(-4 α π² (kx² + ky² + kz²))`` (so iteration ``t`` holds the field at time ``t``),
   with NPB's folding of index ``i`` to ``mod(i + n/2, n) - n/2``, then transforms a copy
   back with the opposite sign, unnormalised;
4. the checksum of iteration ``t`` sums the 1024 elements
   ``(j mod nx, 3j mod ny, 5j mod nz)``, ``j = 1..1024``, divided by ``nx ny nz``.

Data lives in the pencils of a :class:`~tachyflow.parallel.PencilDecomposition` (any number
of ranks, uneven pieces allowed): the x-transform runs on x-pencils, the project's
:class:`~tachyflow.parallel.Transposer` moves the field to y- and z-pencils for the others,
and the evolution happens on z-pencils. Transforms are planned pyFFTW plans
(:class:`~tachyflow.numerics.fft.AxisTransform`), built once before anything is timed.

Timing follows NPB: one untimed pass of the setup (initial field and forward FFT), then,
timed, the setup again and ``niter`` iterations of evolve, inverse FFT and checksum.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.fft import AxisTransform, empty
from tachyflow.parallel import PencilDecomposition, Transposer
from tachyflow.programs.npb.common import KernelResult
from tachyflow.programs.npb.random import A, power, randlc, vranlc

SEED = 314159265.0
ALPHA = 1.0e-6
CHECKSUM_POINTS = 1024
TOLERANCE = 1.0e-12  # NPB's epsilon, relative to each reference checksum
_PLANES_PER_BLOCK = 8


@dataclass(frozen=True)
class ProblemClass:
    """One NPB FT problem size and its official checksums.

    Attributes
    ----------
    nx, ny, nz : int
        Grid points along x, y and z.
    niter : int
        Timed iterations.
    checksums : tuple of complex
        NPB's reference checksum of each iteration, ``niter`` of them.
    """

    nx: int
    ny: int
    nz: int
    niter: int
    checksums: tuple[complex, ...]

    @property
    def ntotal(self) -> int:
        """Number of grid points."""
        return self.nx * self.ny * self.nz


# Reference checksums from ``verify`` in NPB 3.4.2's FT/ft.f90.
CLASSES = {
    "S": ProblemClass(
        64,
        64,
        64,
        6,
        (
            complex(5.546087004964e02, 4.845363331978e02),
            complex(5.546385409189e02, 4.865304269511e02),
            complex(5.546148406171e02, 4.883910722336e02),
            complex(5.545423607415e02, 4.901273169046e02),
            complex(5.544255039624e02, 4.917475857993e02),
            complex(5.542683411902e02, 4.932597244941e02),
        ),
    ),
    "W": ProblemClass(
        128,
        128,
        32,
        6,
        (
            complex(5.673612178944e02, 5.293246849175e02),
            complex(5.631436885271e02, 5.282149986629e02),
            complex(5.594024089970e02, 5.270996558037e02),
            complex(5.560698047020e02, 5.260027904925e02),
            complex(5.530898991250e02, 5.249400845633e02),
            complex(5.504159734538e02, 5.239212247086e02),
        ),
    ),
    "A": ProblemClass(
        256,
        256,
        128,
        6,
        (
            complex(5.046735008193e02, 5.114047905510e02),
            complex(5.059412319734e02, 5.098809666433e02),
            complex(5.069376896287e02, 5.098144042213e02),
            complex(5.077892868474e02, 5.101336130759e02),
            complex(5.085233095391e02, 5.104914655194e02),
            complex(5.091487099959e02, 5.107917842803e02),
        ),
    ),
}


def operation_count(spec: ProblemClass) -> float:
    """NPB FT's operation count: Mop/s = this / seconds / 1e6.

    ``ft.f90`` computes ``1e-6 * ntotal * (14.8157 + 7.19641 log(ntotal) + (5.23518 +
    7.21113 log(ntotal)) niter) / time`` with natural logarithms. Its four constants are
    Fortran default-real (single-precision) literals widened to double in the expression,
    so they are widened from float32 here too: the same constants as NPB, not the decimals.
    """
    c1, c2, c3, c4 = (float(np.float32(c)) for c in (14.8157, 7.19641, 5.23518, 7.21113))
    ntotal = float(spec.ntotal)
    return ntotal * (c1 + c2 * math.log(ntotal) + (c3 + c4 * math.log(ntotal)) * spec.niter)


def initial_conditions(decomposition: PencilDecomposition, out: np.ndarray) -> np.ndarray:
    """Fill ``out``, this rank's x-pencil, with NPB FT's initial field; return it.

    Follows ``compute_initial_conditions``: jump the stream to this rank's first point
    (plane ``z0``, line ``y0``), draw each z-plane's ``2 nx ny_local`` numbers in one
    ``vranlc`` call, and jump ``2 nx ny`` draws from plane to plane.
    """
    nx, ny, _ = decomposition.global_shape
    _, y0, z0 = decomposition.pencils["x"].start
    if out.size:
        _, start = randlc(SEED, power(A, 2 * nx * (z0 * ny + y0)))
        _draw_planes(out, start, power(A, 2 * nx * ny))
    return out


@kernel
def _draw_planes(out, start, plane_jump):  # pragma: no cover  (compiled)
    """Fill x-pencil ``out`` plane by plane from seed ``start``, ``plane_jump`` apart."""
    nx, lines, planes = out.shape
    count = 2 * nx * lines
    # Planes are drawn a few at a time so that each (x, y) receives a run of contiguous z
    # values: writing one plane at a time into z-fastest storage wastes most of every cache
    # line, and took as long as drawing the numbers.
    block = np.empty((_PLANES_PER_BLOCK, count))
    for first in range(0, planes, _PLANES_PER_BLOCK):
        chunk = min(_PLANES_PER_BLOCK, planes - first)
        for offset in range(chunk):
            vranlc(count, start, A, block[offset])
            _, start = randlc(start, plane_jump)
        for x in range(nx):
            for y in range(lines):
                # Pairs of draws are (real, imaginary), x fastest then y: Fortran's u0(x, y).
                m = 2 * (x + nx * y)
                for offset in range(chunk):
                    out[x, y, first + offset] = complex(block[offset, m], block[offset, m + 1])


def evolution_factors(decomposition: PencilDecomposition, out: np.ndarray) -> np.ndarray:
    """Fill ``out``, this rank's z-pencil, with ``exp(-4 α π² (ī² + j̄² + k̄²))``; return it.

    ``ī = mod(i + nx/2, nx) - nx/2`` folds the global index ``i`` to the signed wavenumber
    (NPB's ``compute_indexmap``); the squares are summed as integers, as NPB does.
    """
    pencil = decomposition.pencils["z"]

    def folded_squares(axis: int) -> np.ndarray:
        n = decomposition.global_shape[axis]
        index = np.arange(pencil.start[axis], pencil.stop[axis], dtype=np.int64)
        return ((index + n // 2) % n - n // 2) ** 2

    # The integer sum takes few distinct values: exponentiate each once and look them up,
    # which gives every point exactly NPB's exp(ap * dfloat(sum)) at a fraction of the cost.
    largest = sum((n // 2) ** 2 for n in decomposition.global_shape)
    table = np.exp(-4.0 * ALPHA * math.pi * math.pi * np.arange(largest + 1, dtype=np.float64))
    _look_up(out, table, folded_squares(0), folded_squares(1), folded_squares(2))
    return out


@kernel
def _look_up(out, table, xx, yy, zz):  # pragma: no cover  (compiled)
    """``out[i, j, k] = table[xx[i] + yy[j] + zz[k]]``."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            base = xx[i] + yy[j]
            for k in range(out.shape[2]):
                out[i, j, k] = table[base + zz[k]]


def checksum_points(decomposition: PencilDecomposition) -> tuple[np.ndarray, ...]:
    """Local x-pencil indices of the checksum points this rank holds, in NPB's order."""
    nx, ny, nz = decomposition.global_shape
    j = np.arange(1, CHECKSUM_POINTS + 1, dtype=np.int64)
    points = np.stack((j % nx, (3 * j) % ny, (5 * j) % nz))
    pencil = decomposition.pencils["x"]
    start = np.array(pencil.start)[:, None]
    stop = np.array(pencil.stop)[:, None]
    mine = np.all((points >= start) & (points < stop), axis=0)
    return tuple(points[:, mine] - start)


class _Solver:
    """The arrays, plans and communication clock of one FT run on one rank."""

    def __init__(self, spec: ProblemClass, decomposition: PencilDecomposition):
        self.spec = spec
        self.decomposition = decomposition
        self.transposer = Transposer(decomposition, np.complex128)
        shape = decomposition.local_shape
        self.x = empty(shape("x"), np.complex128)
        self.y = empty(shape("y"), np.complex128)
        self.spectrum = empty(shape("z"), np.complex128)  # NPB's u0, evolved in place
        self.z = empty(shape("z"), np.complex128)  # NPB's u1, transformed back
        self.factors = np.empty(shape("z"))
        # NPB's forward transform has exp(+i...), FFTW's "backward" sign; the inverse the
        # other. Plans are made before the arrays hold data (planning overwrites them).
        self.forward = (
            AxisTransform(self.x, self.x, 0, "backward"),
            AxisTransform(self.y, self.y, 1, "backward"),
            AxisTransform(self.spectrum, self.spectrum, 2, "backward"),
        )
        self.inverse = (
            AxisTransform(self.z, self.z, 2, "forward"),
            AxisTransform(self.y, self.y, 1, "forward"),
            AxisTransform(self.x, self.x, 0, "forward"),
        )
        self.points = checksum_points(decomposition)
        self.communication = 0.0

    def _move(self, source: np.ndarray, orientation: str, target: np.ndarray, to: str) -> None:
        began = time.perf_counter()
        self.transposer.transpose(source, orientation, to, out=target)
        self.communication += time.perf_counter() - began

    def setup(self) -> None:
        """Evolution factors, initial field and its forward transform (NPB's setup)."""
        evolution_factors(self.decomposition, self.factors)
        initial_conditions(self.decomposition, self.x)
        fft_x, fft_y, fft_z = self.forward
        fft_x()
        self._move(self.x, "x", self.y, "y")
        fft_y()
        self._move(self.y, "y", self.spectrum, "z")
        fft_z()

    def iterate(self) -> complex:
        """One time step: evolve, transform back, return the global checksum."""
        np.multiply(self.spectrum, self.factors, out=self.spectrum)
        np.copyto(self.z, self.spectrum)
        ifft_z, ifft_y, ifft_x = self.inverse
        ifft_z()
        self._move(self.z, "z", self.y, "y")
        ifft_y()
        self._move(self.y, "y", self.x, "x")
        ifft_x()
        local = np.array([self.x[self.points].sum() / self.spec.ntotal])
        total = np.empty_like(local)
        began = time.perf_counter()
        self.decomposition.comm.Allreduce(local, total, op=MPI.SUM)
        self.communication += time.perf_counter() - began
        return complex(total[0])


def run(problem_class: str, comm) -> KernelResult:
    """Run NPB FT of ``problem_class`` on ``comm`` and verify it (collective).

    Parameters
    ----------
    problem_class : str
        A key of :data:`CLASSES`: ``"S"``, ``"W"`` or ``"A"``.
    comm : mpi4py.MPI.Intracomm
        The ranks to run on; any number works (pieces may be uneven or empty).

    Returns
    -------
    KernelResult
        The same on every rank: every iteration's checksum checked against NPB's within
        1e-12 (relative), ``seconds`` the slowest rank's timed section, and ``timings``
        the slowest rank's transposes and checksum reductions (``communication``) and the
        rest (``computation``).

    Raises
    ------
    ValueError
        ``problem_class`` unknown; raised on every rank before any communication.
    """
    if problem_class not in CLASSES:
        raise ValueError(
            f"FT problem class must be one of {', '.join(CLASSES)}, got {problem_class!r}"
        )
    spec = CLASSES[problem_class]
    with PencilDecomposition((spec.nx, spec.ny, spec.nz), None, comm) as decomposition:
        solver = _Solver(spec, decomposition)
        # NPB runs the setup once untimed so that every page is touched before timing.
        solver.setup()
        solver.communication = 0.0
        comm.Barrier()
        began = time.perf_counter()
        solver.setup()
        sums = [solver.iterate() for _ in range(spec.niter)]
        elapsed = time.perf_counter() - began
        seconds = decomposition.maximum(elapsed)
        communication = decomposition.maximum(solver.communication)
        computation = decomposition.maximum(elapsed - solver.communication)
        ranks = decomposition.size
    checks = {
        f"checksum {t}": (computed, reference, TOLERANCE)
        for t, (computed, reference) in enumerate(zip(sums, spec.checksums, strict=True), 1)
    }
    return KernelResult(
        kernel="FT",
        problem_class=problem_class,
        size=f"{spec.nx}x{spec.ny}x{spec.nz}",
        iterations=spec.niter,
        seconds=seconds,
        operations=operation_count(spec),
        checks=checks,
        timings={"computation": computation, "communication": communication},
        ranks=ranks,
    )

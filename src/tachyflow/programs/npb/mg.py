"""NPB 3.4.2 MG: V-cycle multigrid for the periodic 3-D Poisson problem ``A u = v``.

The right-hand side ``v`` (``zran3``) is zero except ``+1`` at the ten largest and ``-1``
at the ten smallest values of a field drawn from NPB's generator (seed 314159265,
``a = 5^13``) in Fortran order over the ``n³`` interior points. Each of ``nit`` iterations
is one V-cycle (``mg3P``: restriction ``rprj3`` down to the 2³ grid, smoother ``psinv``
there, then prolongation ``interp``, residual ``resid`` and smoothing on every finer level)
followed by the fine-grid residual; the result is the L2 norm of the last residual
(``norm2u3``), verified against NPB's value to a relative 1e-8. One untimed V-cycle runs
first, as in NPB; Mop/s is NPB's ``58 nit n³ / time``.

Arrays are NPB's ``u(i1, i2, i3)`` stored C-ordered as ``u[i3, i2, i1]``, each axis with
one periodic ghost layer on either side. Ranks (a power of two, at most ``n / 2``) own
equal slabs of ``z`` planes on every level down to the one with one plane per rank,
``kt = log2(ranks)``, and trade one ghost plane with each neighbour in ``comm3``. Level
``kt`` is then gathered on every rank, and the levels from ``kt`` down to the 2³ grid are
computed redundantly everywhere, which costs at most ``(ranks + 2)³`` points. Every point
is computed with NPB's arithmetic in NPB's order, so ``u`` does not depend on the rank
count; only the sums of the norm are reassociated.
"""

from __future__ import annotations

import math

import numpy as np
from mpi4py import MPI

from tachyflow.numerics.compiled import kernel
from tachyflow.programs.npb.common import KernelResult
from tachyflow.programs.npb.random import A, seed_after, vranlc

SEED = 314159265.0
CHARGES = 10  # NPB's mm: points set to +1 and to -1
EPSILON = 1e-8  # NPB's relative tolerance on the L2 norm
OPERATIONS_PER_POINT = 58.0  # per fine-grid point and iteration (NPB's Mop/s formula)

# The operator A and the S(a) smoother of classes S, W and A (NPB's a(0:3) and c(0:3)).
# resid drops the a(1) term and psinv the c(3) term, as NPB does: both are zero.
OPERATOR = (-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0)
SMOOTHER = (-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0)

# Class -> grid points per axis, iterations and NPB 3.4.2's L2 norm of the final residual.
CLASSES = {
    "S": {"n": 32, "nit": 4, "rnm2": 0.5307707005734e-04},
    "W": {"n": 128, "nit": 4, "rnm2": 0.6467329375339e-05},
    "A": {"n": 256, "nit": 4, "rnm2": 0.2433365309069e-05},
}


@kernel(inline="always")
def _line_sums(x, i3, i2, edges, corners):  # pragma: no cover  (compiled)
    """Along the x line (i3, i2): the sums of the four edge neighbours and of the four
    corner neighbours in the (i2, i3) plane, NPB's buffers for resid and psinv."""
    for i1 in range(x.shape[2]):
        edges[i1] = x[i3, i2 - 1, i1] + x[i3, i2 + 1, i1] + x[i3 - 1, i2, i1] + x[i3 + 1, i2, i1]
        corners[i1] = (
            x[i3 - 1, i2 - 1, i1]
            + x[i3 - 1, i2 + 1, i1]
            + x[i3 + 1, i2 - 1, i1]
            + x[i3 + 1, i2 + 1, i1]
        )


@kernel
def _resid(u, v, r, a0, a2, a3, u1, u2):  # pragma: no cover  (compiled)
    """``r = v - A u`` on the interior (NPB's resid); ``r`` may be ``v``."""
    n3, n2, n1 = u.shape
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            _line_sums(u, i3, i2, u1, u2)
            for i1 in range(1, n1 - 1):
                r[i3, i2, i1] = (
                    v[i3, i2, i1]
                    - a0 * u[i3, i2, i1]
                    - a2 * (u2[i1] + u1[i1 - 1] + u1[i1 + 1])
                    - a3 * (u2[i1 - 1] + u2[i1 + 1])
                )


@kernel
def _psinv(r, u, c0, c1, c2, r1, r2):  # pragma: no cover  (compiled)
    """``u = u + C r`` on the interior (NPB's psinv smoother)."""
    n3, n2, n1 = r.shape
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            _line_sums(r, i3, i2, r1, r2)
            for i1 in range(1, n1 - 1):
                u[i3, i2, i1] = (
                    u[i3, i2, i1]
                    + c0 * r[i3, i2, i1]
                    + c1 * (r[i3, i2, i1 - 1] + r[i3, i2, i1 + 1] + r1[i1])
                    + c2 * (r2[i1] + r1[i1 - 1] + r1[i1 + 1])
                )


@kernel
def _rprj3(r, s, x1, y1):  # pragma: no cover  (compiled)
    """Restrict fine ``r`` onto the interior of coarse ``s`` (NPB's rprj3): coarse point
    ``j`` sits on fine point ``2 j`` (ghost-inclusive indices)."""
    m3j, m2j, m1j = s.shape
    for j3 in range(1, m3j - 1):
        i3 = 2 * j3
        for j2 in range(1, m2j - 1):
            i2 = 2 * j2
            for j1 in range(1, m1j):
                i1 = 2 * j1 - 1
                x1[i1] = (
                    r[i3, i2 - 1, i1] + r[i3, i2 + 1, i1] + r[i3 - 1, i2, i1] + r[i3 + 1, i2, i1]
                )
                y1[i1] = (
                    r[i3 - 1, i2 - 1, i1]
                    + r[i3 + 1, i2 - 1, i1]
                    + r[i3 - 1, i2 + 1, i1]
                    + r[i3 + 1, i2 + 1, i1]
                )
            for j1 in range(1, m1j - 1):
                i1 = 2 * j1
                y2 = (
                    r[i3 - 1, i2 - 1, i1]
                    + r[i3 + 1, i2 - 1, i1]
                    + r[i3 - 1, i2 + 1, i1]
                    + r[i3 + 1, i2 + 1, i1]
                )
                x2 = r[i3, i2 - 1, i1] + r[i3, i2 + 1, i1] + r[i3 - 1, i2, i1] + r[i3 + 1, i2, i1]
                s[j3, j2, j1] = (
                    0.5 * r[i3, i2, i1]
                    + 0.25 * (r[i3, i2, i1 - 1] + r[i3, i2, i1 + 1] + x2)
                    + 0.125 * (x1[i1 - 1] + x1[i1 + 1] + y2)
                    + 0.0625 * (y1[i1 - 1] + y1[i1 + 1])
                )


@kernel
def _interp(z, u, z1, z2, z3):  # pragma: no cover  (compiled)
    """Add the trilinear interpolation of coarse ``z`` to fine ``u`` (NPB's interp, the
    branch for grids with no axis of 3 points, which are all grids of MG's classes).

    Coarse point ``i`` (ghosts included) feeds fine points ``2 i`` and ``2 i + 1``, so the
    fine ghosts are computed too, from the coarse ghosts, exactly as their owner computes
    them: no exchange is needed afterwards."""
    mm3, mm2, mm1 = z.shape
    for i3 in range(mm3 - 1):
        for i2 in range(mm2 - 1):
            for i1 in range(mm1):
                z1[i1] = z[i3, i2 + 1, i1] + z[i3, i2, i1]
                z2[i1] = z[i3 + 1, i2, i1] + z[i3, i2, i1]
                z3[i1] = z[i3 + 1, i2 + 1, i1] + z[i3 + 1, i2, i1] + z1[i1]
            # NPB's four i1 loops touch disjoint fine points, so one loop does them all.
            for i1 in range(mm1 - 1):
                f1 = 2 * i1
                u[2 * i3, 2 * i2, f1] += z[i3, i2, i1]
                u[2 * i3, 2 * i2, f1 + 1] += 0.5 * (z[i3, i2, i1 + 1] + z[i3, i2, i1])
                u[2 * i3, 2 * i2 + 1, f1] += 0.5 * z1[i1]
                u[2 * i3, 2 * i2 + 1, f1 + 1] += 0.25 * (z1[i1] + z1[i1 + 1])
                u[2 * i3 + 1, 2 * i2, f1] += 0.5 * z2[i1]
                u[2 * i3 + 1, 2 * i2, f1 + 1] += 0.25 * (z2[i1] + z2[i1 + 1])
                u[2 * i3 + 1, 2 * i2 + 1, f1] += 0.25 * z3[i1]
                u[2 * i3 + 1, 2 * i2 + 1, f1 + 1] += 0.125 * (z3[i1] + z3[i1 + 1])


@kernel
def _periodic(u, along_z):  # pragma: no cover  (compiled)
    """Fill the ghosts in x and y of the interior planes from the opposite side, and in
    ``z`` too when ``along_z`` (NPB's comm3 on a grid held whole)."""
    n3, n2, n1 = u.shape
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            u[i3, i2, 0] = u[i3, i2, n1 - 2]
            u[i3, i2, n1 - 1] = u[i3, i2, 1]
        for i1 in range(n1):
            u[i3, 0, i1] = u[i3, n2 - 2, i1]
            u[i3, n2 - 1, i1] = u[i3, 1, i1]
    if along_z:
        for i2 in range(n2):
            for i1 in range(n1):
                u[0, i2, i1] = u[n3 - 2, i2, i1]
                u[n3 - 1, i2, i1] = u[1, i2, i1]


@kernel
def _sum_squares(r):  # pragma: no cover  (compiled)
    """Sum of squares and largest magnitude over the interior (NPB's norm2u3 loop)."""
    n3, n2, n1 = r.shape
    s = 0.0
    largest = 0.0
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            for i1 in range(1, n1 - 1):
                s += r[i3, i2, i1] ** 2
                largest = max(largest, abs(r[i3, i2, i1]))
    return s, largest


@kernel
def _fill_random(z, seed):  # pragma: no cover  (compiled)
    """Draw the interior of ``z`` line by line in Fortran order, starting after ``seed``.

    NPB starts each line from a seed jumped ahead from the plane's (``a^nx`` per line,
    ``a^(nx ny)`` per plane); those jumps are exact products mod 2^46, so every line
    starts exactly where the previous one ended, which is how the stream is carried
    here."""
    n3, n2, n1 = z.shape
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            seed = vranlc(n1 - 2, seed, A, z[i3, i2, 1 : n1 - 1])


@kernel
def _bubble(ten, positions, largest):  # pragma: no cover  (compiled)
    """NPB's bubble: move the new entry at slot 0 up past entries it beats strictly."""
    for i in range(ten.size - 1):
        if (ten[i] > ten[i + 1]) if largest else (ten[i] < ten[i + 1]):
            ten[i], ten[i + 1] = ten[i + 1], ten[i]
            positions[i], positions[i + 1] = positions[i + 1], positions[i]
        else:
            return


@kernel
def _extrema(z, first_plane, low, low_at, high, high_at):  # pragma: no cover  (compiled)
    """NPB's candidate search over the interior in Fortran order: ``high`` (ascending)
    keeps the largest values, ``low`` (descending) the smallest; ``*_at`` are the global
    Fortran-order positions (-1 for an empty slot)."""
    n3, n2, n1 = z.shape
    nx, ny = n1 - 2, n2 - 2
    high[:] = 0.0
    low[:] = 1.0
    high_at[:] = -1
    low_at[:] = -1
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            for i1 in range(1, n1 - 1):
                value = z[i3, i2, i1]
                if value > high[0]:
                    high[0] = value
                    high_at[0] = ((first_plane + i3 - 1) * ny + i2 - 1) * nx + i1 - 1
                    _bubble(high, high_at, True)
                if value < low[0]:
                    low[0] = value
                    low_at[0] = ((first_plane + i3 - 1) * ny + i2 - 1) * nx + i1 - 1
                    _bubble(low, low_at, False)


def _best(values: np.ndarray, positions: np.ndarray, largest: bool) -> np.ndarray:
    """The CHARGES best candidates, earlier positions winning ties, as NPB's strict
    comparisons in Fortran order make them win."""
    keep = positions >= 0
    values, positions = values[keep], positions[keep]
    order = np.lexsort((positions, -values if largest else values))
    return positions[order[:CHARGES]]


def _check_ranks(n: int, size: int) -> None:
    """ValueError unless ``size`` ranks can own equal slabs down to one plane each."""
    if size & (size - 1) or 2 * size > n:
        raise ValueError(
            f"MG splits its {n}^3 grid into equal slabs of z planes that halve with every "
            f"level: the number of ranks must be a power of two no larger than {n // 2}, "
            f"got {size}"
        )


def zran3(n: int, comm) -> np.ndarray:
    """NPB's right-hand side ``v`` on this rank's slab (collective).

    Parameters
    ----------
    n : int
        Grid points per axis (a power of two).
    comm : mpi4py.MPI.Comm
        A power-of-two number of ranks, at most ``n / 2``; rank ``p`` owns the ``z``
        planes ``p n / ranks`` to ``(p + 1) n / ranks - 1``.

    Returns
    -------
    numpy.ndarray
        Shape ``(n / ranks + 2, n + 2, n + 2)``, ``[i3, i2, i1]`` with periodic ghosts
        filled: -1 at the ten smallest and +1 at the ten largest values of NPB's random
        field, 0 elsewhere.

    Raises
    ------
    ValueError
        For a rank count that does not split ``n`` as above (on every rank).
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    _check_ranks(n, size)
    planes = n // size
    first_plane = rank * planes
    z = np.zeros((planes + 2, n + 2, n + 2))
    _fill_random(z, seed_after(SEED, first_plane * n * n))
    low, high = np.empty(CHARGES), np.empty(CHARGES)
    low_at, high_at = np.empty(CHARGES, np.int64), np.empty(CHARGES, np.int64)
    _extrema(z, first_plane, low, low_at, high, high_at)
    values = np.empty((size, 2, CHARGES))
    positions = np.empty((size, 2, CHARGES), np.int64)
    comm.Allgather(np.stack([low, high]), values)
    comm.Allgather(np.stack([low_at, high_at]), positions)
    z.fill(0.0)
    # NPB sets the -1 points first, then the +1 points.
    for charge, best in (
        (-1.0, _best(values[:, 0].ravel(), positions[:, 0].ravel(), largest=False)),
        (1.0, _best(values[:, 1].ravel(), positions[:, 1].ravel(), largest=True)),
    ):
        i3, i2, i1 = np.unravel_index(best, (n, n, n))
        mine = (i3 >= first_plane) & (i3 < first_plane + planes)
        z[i3[mine] - first_plane + 1, i2[mine] + 1, i1[mine] + 1] = charge
    _Exchange(comm).comm3(z, distributed=True)
    return z


def norm2u3(r: np.ndarray, points: int, exchange: _Exchange) -> tuple[float, float]:
    """NPB's norm2u3 over the slabs of all ranks (collective): ``(sqrt(Σ r² / points),
    max |r|)``."""
    s, largest = _sum_squares(r)
    total = exchange.allreduce(np.array([s, -largest]))
    return math.sqrt(total[0] / points), -total[1]


class _Exchange:
    """comm3 and the other communication of MG, timing it."""

    def __init__(self, comm):
        self.comm = comm
        self.size, rank = comm.Get_size(), comm.Get_rank()
        self.up, self.down = (rank + 1) % self.size, (rank - 1) % self.size
        self.seconds = 0.0

    def comm3(self, u: np.ndarray, distributed: bool) -> None:
        """Fill the periodic ghosts of ``u``: a slab trades its end planes with the
        neighbouring slabs, a grid held whole wraps onto itself."""
        if not distributed or self.size == 1:
            _periodic(u, True)
            return
        _periodic(u, False)
        start = MPI.Wtime()
        self.comm.Sendrecv(u[-2], self.up, 0, u[0], self.down, 0)
        self.comm.Sendrecv(u[1], self.down, 1, u[-1], self.up, 1)
        self.seconds += MPI.Wtime() - start

    def gather_planes(self, u: np.ndarray) -> None:
        """Complete a grid held whole from every rank's equal share of its planes."""
        start = MPI.Wtime()
        if self.size > 1:
            self.comm.Allgather(MPI.IN_PLACE, u[1:-1])
        self.seconds += MPI.Wtime() - start

    def allreduce(self, values: np.ndarray) -> np.ndarray:
        """Sum of the first entry and maximum of the second (as ``-min(-x)``)."""
        start = MPI.Wtime()
        total = np.empty(2)
        self.comm.Allreduce(values[:1], total[:1], op=MPI.SUM)
        self.comm.Allreduce(values[1:], total[1:], op=MPI.MIN)
        self.seconds += MPI.Wtime() - start
        return total


class _Multigrid:
    """The hierarchy of grids of one rank and NPB's V-cycle on it.

    Level ``k`` has ``2^k`` points per axis (NPB's ``lt`` is the finest, ``lb = 1`` the
    coarsest). Levels above ``kt`` are slabs; levels up to ``kt`` are held whole.
    """

    def __init__(self, n: int, comm):
        self.exchange = _Exchange(comm)
        size, rank = comm.Get_size(), comm.Get_rank()
        self.lt = n.bit_length() - 1
        self.kt = max(1, size.bit_length() - 1)
        self.u, self.r = {}, {}
        # first plane of this rank's slab on level k, and the planes it owns
        self.first, self.planes = {}, {}
        for k in range(1, self.lt + 1):
            points = 2**k
            self.planes[k] = points // size if k >= self.kt else points
            self.first[k] = rank * self.planes[k] if k >= self.kt else 0
            depth = self.planes[k] if k > self.kt else points
            shape = (depth + 2, points + 2, points + 2)
            self.u[k], self.r[k] = np.zeros(shape), np.zeros(shape)
        self.v = zran3(n, comm)
        # Line buffers of NPB's stencils, long enough for the finest level.
        self.w1, self.w2, self.w3 = (np.empty(n + 2) for _ in range(3))

    def slab(self, grid: dict, k: int) -> np.ndarray:
        """This rank's slab of level ``k`` with its ghost planes: on level ``kt``, where
        the grid is held whole, a view of the rank's planes within it."""
        if k != self.kt:
            return grid[k]
        return grid[k][self.first[k] : self.first[k] + self.planes[k] + 2]

    def resid(self, u: np.ndarray, v: np.ndarray, k: int) -> None:
        """``r = v - A u`` on level ``k``, then its ghosts."""
        _resid(u, v, self.r[k], OPERATOR[0], OPERATOR[2], OPERATOR[3], self.w1, self.w2)
        self.exchange.comm3(self.r[k], k > self.kt)

    def psinv(self, k: int) -> None:
        """Smooth ``u`` of level ``k`` with its residual, then its ghosts."""
        _psinv(self.r[k], self.u[k], SMOOTHER[0], SMOOTHER[1], SMOOTHER[2], self.w1, self.w2)
        self.exchange.comm3(self.u[k], k > self.kt)

    def rprj3(self, k: int) -> None:
        """Restrict the residual of level ``k`` onto level ``k - 1``."""
        j = k - 1
        _rprj3(self.r[k], self.slab(self.r, j), self.w1, self.w2)
        if j == self.kt:
            self.exchange.gather_planes(self.r[j])
        self.exchange.comm3(self.r[j], j > self.kt)

    def interp(self, k: int) -> None:
        """Add the interpolated correction of level ``k - 1`` to ``u`` of level ``k``."""
        _interp(self.slab(self.u, k - 1), self.u[k], self.w1, self.w2, self.w3)

    def mg3p(self) -> None:
        """One V-cycle (NPB's mg3P); leaves ``r`` of the finest level stale, as NPB."""
        for k in range(self.lt, 1, -1):
            self.rprj3(k)
        self.u[1].fill(0.0)
        self.psinv(1)
        for k in range(2, self.lt):
            self.u[k].fill(0.0)
            self.interp(k)
            self.resid(self.u[k], self.r[k], k)
            self.psinv(k)
        self.interp(self.lt)
        self.resid(self.u[self.lt], self.v, self.lt)
        self.psinv(self.lt)


def run(problem_class: str, comm) -> KernelResult:
    """Run MG of ``problem_class`` on ``comm`` and verify it (collective).

    Parameters
    ----------
    problem_class : str
        ``"S"``, ``"W"`` or ``"A"``.
    comm : mpi4py.MPI.Comm
        A power-of-two number of ranks, at most half the grid points per axis.

    Returns
    -------
    KernelResult
        The same on every rank; ``seconds`` is the slowest rank's timed section as NPB
        times it (the first residual and its norm, ``nit`` V-cycles each followed by the
        residual, and the final norm).

    Raises
    ------
    ValueError
        For an unknown class or an unsupported rank count; raised on every rank.
    """
    if problem_class not in CLASSES:
        raise ValueError(
            f"unknown NPB MG class {problem_class!r}; expected one of {', '.join(CLASSES)}"
        )
    parameters = CLASSES[problem_class]
    n, nit = parameters["n"], parameters["nit"]
    size = comm.Get_size()
    _check_ranks(n, size)
    grids = _Multigrid(n, comm)
    exchange, lt = grids.exchange, grids.lt

    # NPB's untimed start-up iteration (which also compiles the kernels here). v is only
    # read, so unlike NPB it need not be generated again; u starts from zero again.
    grids.resid(grids.u[lt], grids.v, lt)
    norm2u3(grids.r[lt], n**3, exchange)
    grids.mg3p()
    grids.resid(grids.u[lt], grids.v, lt)
    grids.u[lt].fill(0.0)

    comm.Barrier()
    exchange.seconds = 0.0
    start = MPI.Wtime()
    grids.resid(grids.u[lt], grids.v, lt)
    norm2u3(grids.r[lt], n**3, exchange)
    for _ in range(nit):
        grids.mg3p()
        grids.resid(grids.u[lt], grids.v, lt)
    rnm2, _ = norm2u3(grids.r[lt], n**3, exchange)
    elapsed = MPI.Wtime() - start

    slowest = np.empty(3)
    comm.Allreduce(
        np.array([elapsed, elapsed - exchange.seconds, exchange.seconds]), slowest, op=MPI.MAX
    )
    return KernelResult(
        kernel="MG",
        problem_class=problem_class,
        size=f"{n}x{n}x{n}",
        iterations=nit,
        seconds=float(slowest[0]),
        operations=OPERATIONS_PER_POINT * nit * float(n) ** 3,
        checks={"L2 norm of the residual": (rnm2, parameters["rnm2"], EPSILON)},
        timings={"computation": float(slowest[1]), "communication": float(slowest[2])},
        ranks=size,
    )

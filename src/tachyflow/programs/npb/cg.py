"""NPB 3.4.2 kernel CG: the smallest eigenvalue of a random sparse matrix by inverse
power iteration, each step solved by 25 conjugate-gradient iterations.

The matrix is NPB's ``makea``: ``NA`` sparse random vectors drawn with NPB's generator
(``sprnvc``), each given the entry 0.5 at its own index (``vecset``), and summed as outer
products scaled by a geometric factor from 1 down to ``rcond``; ``rcond - shift`` goes on the
diagonal. Duplicate entries are summed in the order NPB sums them, so the matrix is NPB's
to the last bit and ``zeta`` meets the official value to 1e-10.

Distribution: a 1D row block per rank. Rank ``r`` owns rows ``lo .. hi-1`` of the matrix and
the same entries of every vector. The matrix-vector product needs the whole search
direction ``p``, gathered in place (``Allgatherv``) once per CG iteration; the dot products
are partial sums combined by :func:`tachyflow.collectives.allreduce`, two per CG iteration
(``p.q`` and ``r.r``, each computed inside the pass that produces its operands) and one
fused reduction of ``||x - A z||^2``, ``x.z`` and ``z.z`` per outer iteration. Any rank count
works; results differ between rank counts only by the order of the partial sums.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from mpi4py import MPI

from tachyflow import collectives
from tachyflow.numerics.compiled import kernel
from tachyflow.programs.npb.common import KernelResult
from tachyflow.programs.npb.random import A as AMULT
from tachyflow.programs.npb.random import randlc

TRAN = 314159265.0  # NPB's seed of the matrix generator
RCOND = 0.1  # the smallest eigenvalue of the generated matrix before the shift
CG_ITERATIONS = 25  # NPB's cgitmax
TOLERANCE = 1e-10  # NPB's epsilon on the relative error of zeta


class CGClass(NamedTuple):
    """One NPB problem class of CG.

    Parameters
    ----------
    na : int
        Order of the matrix.
    nonzer : int
        Nonzeros of each random sparse vector.
    niter : int
        Outer (inverse power) iterations timed.
    shift : float
        Eigenvalue shift.
    zeta : float
        NPB's reference value of the final ``zeta``.
    """

    na: int
    nonzer: int
    niter: int
    shift: float
    zeta: float


CLASSES = {
    "S": CGClass(1400, 7, 15, 10.0, 8.5971775078648),
    "W": CGClass(7000, 8, 15, 12.0, 10.362595087124),
    "A": CGClass(14000, 11, 15, 20.0, 17.130235054029),
    "B": CGClass(75000, 13, 75, 60.0, 22.712745482631),
}


def operations(problem: CGClass) -> float:
    """NPB's operation count of the timed section (``mflops`` of ``cg.f90`` times 1e6).

    Parameters
    ----------
    problem : CGClass

    Returns
    -------
    float
    """
    per_row = problem.nonzer * (problem.nonzer + 1)
    return 2.0 * problem.niter * problem.na * (3 + per_row + 25 * (5 + per_row) + 3)


@kernel
def _random_vectors(n, nonzer, seed):  # pragma: no cover  (compiled)
    """NPB's ``sprnvc`` then ``vecset(.., i, 0.5)`` for every row ``i``, in NPB's order.

    Returns the column indices (0-based) and values of the ``n`` sparse vectors, one row
    each, and how many entries each has (``nonzer`` or ``nonzer + 1``).
    """
    nn1 = 1  # the smallest power of two not less than n (at least 2, as NPB's loop gives)
    while True:
        nn1 *= 2
        if nn1 >= n:
            break
    columns = np.empty((n, nonzer + 1), np.int64)
    values = np.empty((n, nonzer + 1))
    counts = np.empty(n, np.int64)
    for i in range(n):
        count = 0
        while count < nonzer:
            value, seed = randlc(seed, AMULT)
            location, seed = randlc(seed, AMULT)
            column = int(nn1 * location)
            if column >= n:
                continue
            repeated = False
            for k in range(count):
                if columns[i, k] == column:
                    repeated = True
                    break
            if repeated:
                continue
            columns[i, count] = column
            values[i, count] = value
            count += 1
        present = False
        for k in range(count):
            if columns[i, k] == i:
                values[i, k] = 0.5
                present = True
        if not present:
            columns[i, count] = i
            values[i, count] = 0.5
            count += 1
        counts[i] = count
    return columns, values, counts


@kernel
def _assemble(columns, values, counts, lo, hi, rcond, shift):  # pragma: no cover
    """Rows ``lo .. hi-1`` of NPB's matrix (``sparse``) in CSR with sorted columns.

    Every outer product's entries are listed row by row in the order NPB generates them
    (vector ``i`` ascending); a stable sort by column then puts the duplicates of an entry
    next to each other in that order, so they are summed exactly as NPB sums them.
    """
    n = counts.size
    rows = hi - lo
    start = np.zeros(rows + 1, np.int64)
    for i in range(n):
        for a in range(counts[i]):
            row = columns[i, a]
            if lo <= row < hi:
                start[row - lo + 1] += counts[i]
    for row in range(rows):
        start[row + 1] += start[row]
    listed_columns = np.empty(start[rows], np.int32)
    listed_values = np.empty(start[rows])
    fill = start[:rows].copy()
    size = 1.0
    ratio = rcond ** (1.0 / n)
    for i in range(n):
        for a in range(counts[i]):
            row = columns[i, a]
            if row < lo or row >= hi:
                continue
            scale = size * values[i, a]
            for b in range(counts[i]):
                column = columns[i, b]
                value = values[i, b] * scale
                if column == row and row == i:
                    value = value + rcond - shift
                listed_columns[fill[row - lo]] = column
                listed_values[fill[row - lo]] = value
                fill[row - lo] += 1
        size = size * ratio
    rowstr = np.empty(rows + 1, np.int64)
    colidx = np.empty(start[rows], np.int32)
    entries = np.empty(start[rows])
    nnz = 0
    for row in range(rows):
        rowstr[row] = nnz
        first = start[row]
        order = np.argsort(listed_columns[first : start[row + 1]], kind="mergesort")
        previous = -1
        for index in order:
            column = listed_columns[first + index]
            if column != previous:
                colidx[nnz] = column
                entries[nnz] = listed_values[first + index]
                nnz += 1
                previous = column
            else:
                entries[nnz - 1] += listed_values[first + index]
    rowstr[rows] = nnz
    return rowstr, colidx[:nnz].copy(), entries[:nnz].copy()


def make_matrix(problem: CGClass, lo: int, hi: int):
    """Rows ``lo .. hi-1`` of NPB's CG matrix (``makea``).

    Parameters
    ----------
    problem : CGClass
    lo, hi : int
        The row range, ``0 <= lo <= hi <= na``.

    Returns
    -------
    rowstr : numpy.ndarray
        Row pointers (int64, ``hi - lo + 1``), from 0.
    colidx : numpy.ndarray
        Global column indices (int32), sorted within each row.
    values : numpy.ndarray
        The entries.
    """
    if not 0 <= lo <= hi <= problem.na:
        raise ValueError(f"row range must lie in [0, {problem.na}], got lo={lo}, hi={hi}")
    # NPB draws one number before makea ('zeta = randlc(tran, amult)'): skip it likewise.
    seed = randlc(TRAN, AMULT)[1]
    columns, values, counts = _random_vectors(problem.na, problem.nonzer, seed)
    return _assemble(columns, values, counts, lo, hi, RCOND, problem.shift)


@kernel
def _start(x, z, r, p):  # pragma: no cover  (compiled)
    """CG's start ``z = 0, r = p = x``; returns this rank's part of ``r.r``."""
    rho = 0.0
    for j in range(x.size):
        value = x[j]
        z[j] = 0.0
        r[j] = value
        p[j] = value
        rho += value * value
    return rho


# The row products: each row's entries taken as slices (a loop from 0 over a known
# length that LLVM vectorises with gathers) and summed in any order (fastmath): 1.3-1.5x
# faster than indexing from the row pointers in order, the result within round-off.
@kernel(fastmath=True)
def _row_product(colidx, values, vector, start, stop):  # pragma: no cover  (compiled)
    columns, entries = colidx[start:stop], values[start:stop]
    total = 0.0
    for k in range(stop - start):
        total += entries[k] * vector[columns[k]]
    return total


@kernel
def _product_dot(rowstr, colidx, values, p_full, lo, q):  # pragma: no cover
    """``q = A p`` on this rank's rows, and this rank's part of ``p.q`` in the same pass."""
    dot = 0.0
    for row in range(q.size):
        total = _row_product(colidx, values, p_full, rowstr[row], rowstr[row + 1])
        q[row] = total
        dot += p_full[lo + row] * total
    return dot


@kernel
def _update_solution(z, r, p, q, alpha):  # pragma: no cover  (compiled)
    """``z += alpha p``, ``r -= alpha q``; returns this rank's part of the new ``r.r``."""
    rho = 0.0
    for j in range(z.size):
        z[j] += alpha * p[j]
        value = r[j] - alpha * q[j]
        r[j] = value
        rho += value * value
    return rho


@kernel
def _update_direction(p, r, beta):  # pragma: no cover  (compiled)
    """``p = r + beta p``."""
    for j in range(p.size):
        p[j] = r[j] + beta * p[j]


@kernel
def _residual_norms(rowstr, colidx, values, z_full, lo, x, sums):  # pragma: no cover
    """This rank's parts of ``||x - A z||^2``, ``x.z`` and ``z.z``, into ``sums``, in one
    pass over the rows (``A z`` itself is not kept: only the residual's norm is used)."""
    residual = 0.0
    xz = 0.0
    zz = 0.0
    for row in range(x.size):
        total = _row_product(colidx, values, z_full, rowstr[row], rowstr[row + 1])
        difference = x[row] - total
        residual += difference * difference
        zj = z_full[lo + row]
        xz += x[row] * zj
        zz += zj * zj
    sums[0] = residual
    sums[1] = xz
    sums[2] = zz


class _PowerIteration:
    """One rank's share of the inverse power iteration, with its communication timed."""

    def __init__(self, problem: CGClass, comm):
        self.comm = comm
        size, rank = comm.Get_size(), comm.Get_rank()
        bounds = [problem.na * index // size for index in range(size + 1)]
        self.lo, self.hi = bounds[rank], bounds[rank + 1]
        self.counts = np.diff(bounds)
        self.displacements = np.array(bounds[:-1])
        self.shift = problem.shift
        self.rowstr, colidx, self.values = make_matrix(problem, self.lo, self.hi)
        # Unsigned column indices spare numba's check for negative (from-the-end) indices
        # in the product's inner loop.
        self.colidx = colidx.view(np.uint32)
        rows = self.hi - self.lo
        self.x = np.ones(rows)
        self.r = np.empty(rows)
        self.q = np.empty(rows)
        # p and z are whole vectors, gathered for the matrix-vector products; this rank
        # updates its slice of them in place.
        self.p_full = np.zeros(problem.na)
        self.z_full = np.zeros(problem.na)
        self.p = self.p_full[self.lo : self.hi]
        self.z = self.z_full[self.lo : self.hi]
        self.local = np.empty(1)
        self.total = np.empty(1)
        self.sums = np.empty(3)
        self.sums_total = np.empty(3)
        self.communication = 0.0

    def _sum(self, local: np.ndarray, total: np.ndarray) -> np.ndarray:
        began = time.perf_counter()
        collectives.allreduce(self.comm, local, "sum", "native", out=total)
        self.communication += time.perf_counter() - began
        return total

    def _scalar_sum(self, value: float) -> float:
        self.local[0] = value
        return float(self._sum(self.local, self.total)[0])

    def _gather(self, full: np.ndarray) -> None:
        began = time.perf_counter()
        self.comm.Allgatherv(MPI.IN_PLACE, [full, self.counts, self.displacements, MPI.DOUBLE])
        self.communication += time.perf_counter() - began

    def conj_grad(self) -> None:
        """NPB's ``conj_grad``: 25 CG iterations on ``A z = x`` from ``z = 0``, then
        the explicit residual norm and the norms the power step needs (in ``sums_total``).

        The residual ``||x - A z||`` only gets printed by NPB, but its product is part of
        the timed work and of NPB's operation count, so it is computed here too.
        """
        rho = self._scalar_sum(_start(self.x, self.z, self.r, self.p))
        self._gather(self.p_full)
        for _ in range(CG_ITERATIONS):
            dot = _product_dot(self.rowstr, self.colidx, self.values, self.p_full, self.lo, self.q)
            alpha = rho / self._scalar_sum(dot)
            rho0 = rho
            rho = self._scalar_sum(_update_solution(self.z, self.r, self.p, self.q, alpha))
            _update_direction(self.p, self.r, rho / rho0)
            self._gather(self.p_full)
        self._gather(self.z_full)
        _residual_norms(
            self.rowstr, self.colidx, self.values, self.z_full, self.lo, self.x, self.sums
        )
        self._sum(self.sums, self.sums_total)

    def step(self) -> float:
        """One inverse power step: ``conj_grad``, ``zeta = shift + 1/(x.z)``, ``x = z/||z||``.

        Returns
        -------
        float
            ``zeta``.
        """
        self.conj_grad()
        _, xz, zz = self.sums_total
        np.multiply(self.z, 1.0 / np.sqrt(zz), out=self.x)
        return self.shift + 1.0 / xz


def run(problem_class: str, comm) -> KernelResult:
    """Run NPB CG at ``problem_class`` (collective; the same result on every rank).

    Parameters
    ----------
    problem_class : str
        One of :data:`CLASSES`.
    comm : mpi4py.MPI.Comm
        Any number of ranks.

    Returns
    -------
    KernelResult
        ``seconds`` is the slowest rank's time of the ``NITER`` timed outer iterations;
        the only check is ``zeta`` against NPB's value at a relative 1e-10.
    """
    if problem_class not in CLASSES:
        raise ValueError(f"class must be one of {sorted(CLASSES)}, got {problem_class!r}")
    problem = CLASSES[problem_class]
    iteration = _PowerIteration(problem, comm)
    # NPB's untimed first step warms code and pages; x then starts again from ones.
    iteration.step()
    iteration.x[:] = 1.0
    iteration.communication = 0.0
    comm.Barrier()
    began = time.perf_counter()
    zeta = 0.0
    for _ in range(problem.niter):
        zeta = iteration.step()
    elapsed = time.perf_counter() - began
    local = np.array([elapsed, elapsed - iteration.communication, iteration.communication])
    slowest = collectives.allreduce(comm, local, "max", "native")
    # Ranks could in principle round their reductions differently; report rank 0's zeta.
    zeta = float(comm.bcast(zeta, root=0))
    return KernelResult(
        kernel="CG",
        problem_class=problem_class,
        size=str(problem.na),
        iterations=problem.niter,
        seconds=float(slowest[0]),
        operations=operations(problem),
        checks={"zeta": (zeta, problem.zeta, TOLERANCE)},
        timings={"computation": float(slowest[1]), "communication": float(slowest[2])},
        ranks=comm.Get_size(),
    )

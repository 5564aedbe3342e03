"""Preconditioned Krylov solvers written without MPI (Jeon & Choi's equations 2-7).

The caller supplies the operator, the preconditioner and the global sums: on one rank
the sums are plain numpy sums, in parallel the driver
(:mod:`tachyflow.solvers.unstructured.solver`)
reduces them over the ranks. Every global sum goes through one call of ``reduce``, which
gets all the partial sums needed at that point of the iteration at once, so dot products
that can be fused cost one reduction: conjugate gradients make two reductions per
iteration, BiCGSTAB three.

Vectors handed to ``matvec`` have ``capacity`` entries (the owned ones first, then room
for the halo the operator fills in); every other vector, and every dot product, covers
the ``size`` owned entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tachyflow.errors import ConvergenceError
from tachyflow.numerics.compiled import kernel


@dataclass
class KrylovResult:
    """What a solve did: iterations, final relative residual, its history."""

    iterations: int
    residual: float
    history: list[float] = field(default_factory=list)
    converged: bool = True


def _check(rtol: float, atol: float, max_iterations: int) -> None:
    if not (np.isfinite(rtol) and rtol >= 0 and np.isfinite(atol) and atol >= 0):
        raise ValueError(f"tolerances must be finite and >= 0, got rtol={rtol!r}, atol={atol!r}")
    if rtol == 0 and atol == 0:
        raise ValueError("rtol and atol are both 0: the solve could never stop")
    if not isinstance(max_iterations, int | np.integer) or max_iterations < 1:
        raise ValueError(f"max_iterations must be a positive integer, got {max_iterations!r}")


def _start(matvec, b, capacity, x):
    """The start ``x``, a vector with room for the halo (``capacity`` entries) holding it,
    and ``r = b - A x``. The product is made exactly when a start value is given, so that
    every rank makes it (or none does): it exchanges the halo."""
    work = np.zeros(b.size if capacity is None else capacity)
    if x is None:
        return np.zeros(b.size), work, b.copy()
    work[: b.size] = x
    return x, work, b - matvec(work)


def _stopping(rr: float, bb: float, rtol: float, atol: float):
    """``‖b‖``, the residual norm to reach and the history's first entry."""
    norm_b = np.sqrt(bb)
    return norm_b, max(rtol * norm_b, atol), [np.sqrt(rr) / norm_b if norm_b else 0.0]


@kernel
def _cg_update(x, r, z, p, q, inverse_diagonal, alpha):  # pragma: no cover  (compiled)
    """One pass for ``x += αp``, ``r -= αq``, ``z = r / diag(A)`` and the local partial
    sums ``r·z`` and ``r·r`` (five numpy passes otherwise: the solve is memory-bound)."""
    rz = rr = 0.0
    for i in range(x.size):
        x[i] += alpha * p[i]
        residual = r[i] - alpha * q[i]
        r[i] = residual
        z[i] = residual * inverse_diagonal[i]
        rz += residual * z[i]
        rr += residual * residual
    return np.array([rz, rr])


@kernel
def _cg_direction(p, z, beta):  # pragma: no cover  (compiled)
    """``p = z + βp`` in one pass."""
    for i in range(p.size):
        p[i] = z[i] + beta * p[i]


def conjugate_gradient(
    matvec: Callable[[np.ndarray], np.ndarray],
    b: np.ndarray,
    inverse_diagonal: np.ndarray,
    reduce: Callable[[np.ndarray], np.ndarray] = np.asarray,
    capacity: int | None = None,
    x: np.ndarray | None = None,
    rtol: float = 1e-8,
    atol: float = 0.0,
    max_iterations: int = 10_000,
) -> tuple[np.ndarray, KrylovResult]:
    """Jacobi-preconditioned conjugate gradients for a symmetric positive-definite ``A``.

    Stops when ``‖r‖ ≤ max(rtol ‖b‖, atol)`` (the true, unpreconditioned residual norm).
    ``reduce`` turns an array of local partial sums into global sums. Returns ``x`` (the
    owned entries) and the :class:`KrylovResult`; raises :class:`ConvergenceError` when
    ``max_iterations`` pass first or the iteration breaks down.
    """
    _check(rtol, atol, max_iterations)
    size = b.size
    x, p, r = _start(matvec, b, capacity, x)
    z = r * inverse_diagonal
    p[:size] = z
    rz, rr, bb = reduce(np.array([r @ z, r @ r, b @ b]))
    norm_b, limit, history = _stopping(rr, bb, rtol, atol)
    if np.sqrt(rr) <= limit:
        return x, KrylovResult(0, history[0], history)
    owned = p[:size]
    for iteration in range(1, max_iterations + 1):
        q = matvec(p)
        (pq,) = reduce(np.array([owned @ q]))
        if not pq > 0:
            raise ConvergenceError(
                f"CG broke down (p·Ap = {pq:.3e}: the matrix is not positive definite)",
                iterations=iteration, residual=history[-1], history=history,
            )
        rz_new, rr = reduce(_cg_update(x, r, z, owned, q, inverse_diagonal, rz / pq))
        history.append(np.sqrt(rr) / norm_b)
        if np.sqrt(rr) <= limit:
            return x, KrylovResult(iteration, history[-1], history)
        _cg_direction(owned, z, rz_new / rz)
        rz = rz_new
    raise ConvergenceError(
        "CG reached its iteration limit", iterations=max_iterations, residual=history[-1],
        history=history,
    )


def bicgstab(
    matvec: Callable[[np.ndarray], np.ndarray],
    b: np.ndarray,
    inverse_diagonal: np.ndarray,
    reduce: Callable[[np.ndarray], np.ndarray] = np.asarray,
    capacity: int | None = None,
    x: np.ndarray | None = None,
    rtol: float = 1e-8,
    atol: float = 0.0,
    max_iterations: int = 10_000,
) -> tuple[np.ndarray, KrylovResult]:
    """Jacobi-preconditioned BiCGSTAB (van der Vorst, right preconditioning) for a general
    non-singular ``A``; same stopping rule, arguments and errors as
    :func:`conjugate_gradient`."""
    _check(rtol, atol, max_iterations)
    size = b.size
    # work: the preconditioned directions, with room for the halo
    x, work, r = _start(matvec, b, capacity, x)
    shadow = r.copy()
    rr, bb = reduce(np.array([r @ r, b @ b]))
    norm_b, limit, history = _stopping(rr, bb, rtol, atol)
    if np.sqrt(rr) <= limit:
        return x, KrylovResult(0, history[0], history)
    rho, rho_previous = rr, 1.0  # the shadow residual is r itself at the start
    p = np.zeros(size)
    v = np.zeros(size)
    alpha = omega = 1.0
    for iteration in range(1, max_iterations + 1):
        p -= omega * v  # p = r + β (p - ω v); p and v start at 0
        p *= (rho / rho_previous) * (alpha / omega)
        p += r
        np.multiply(p, inverse_diagonal, out=work[:size])
        x_direction = work[:size].copy()
        v = matvec(work)
        (shadow_v,) = reduce(np.array([shadow @ v]))
        if shadow_v == 0 or rho == 0:
            raise ConvergenceError(
                "BiCGSTAB broke down (r0·v = 0 or ρ = 0)", iterations=iteration,
                residual=history[-1], history=history,
            )
        alpha = rho / shadow_v
        s = r - alpha * v
        np.multiply(s, inverse_diagonal, out=work[:size])
        t = matvec(work)
        ts, tt = reduce(np.array([t @ s, t @ t]))
        omega = ts / tt if tt > 0 else 0.0
        x += alpha * x_direction + omega * work[:size]
        r = s - omega * t
        rr, rho_new = reduce(np.array([r @ r, shadow @ r]))
        history.append(np.sqrt(rr) / norm_b)
        if np.sqrt(rr) <= limit:
            return x, KrylovResult(iteration, history[-1], history)
        if omega == 0:
            raise ConvergenceError(
                "BiCGSTAB broke down (ω = 0)", iterations=iteration, residual=history[-1],
                history=history,
            )
        rho_previous, rho = rho, rho_new
    raise ConvergenceError(
        "BiCGSTAB reached its iteration limit", iterations=max_iterations,
        residual=history[-1], history=history,
    )

"""NPB's pseudo-random number generator (``randlc``/``vranlc`` of NPB 3.4).

A linear congruential generator ``x_{k+1} = a x_k mod 2^46`` with ``a = 5^13``, returning
``x / 2^46``. NPB computes the product exactly in double precision by splitting both
factors into 23-bit halves; so does this module, in numba, so that every kernel draws
exactly NPB's numbers.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel

A = 1220703125.0  # 5^13, the multiplier of every NPB kernel
R23 = 0.5**23
R46 = R23 * R23
T23 = 2.0**23
T46 = T23 * T23


@kernel
def _next(x: float, a: float) -> float:  # pragma: no cover  (compiled)
    """``a x mod 2^46`` in exact double arithmetic (NPB's splitting)."""
    a1 = float(int(R23 * a))
    a2 = a - T23 * a1
    x1 = float(int(R23 * x))
    x2 = x - T23 * x1
    t1 = a1 * x2 + a2 * x1
    t2 = float(int(R23 * t1))
    z = t1 - T23 * t2
    t3 = T23 * z + a2 * x2
    t4 = float(int(R46 * t3))
    return t3 - T46 * t4


@kernel
def randlc(x: float, a: float = A) -> tuple[float, float]:  # pragma: no cover  (compiled)
    """The next number in (0, 1) and the new seed: NPB's ``randlc(x, a)``."""
    seed = _next(x, a)
    return R46 * seed, seed


@kernel
def vranlc(count: int, x: float, a: float, out: np.ndarray) -> float:  # pragma: no cover
    """Fill ``out[:count]`` with the next ``count`` numbers; returns the new seed (NPB's
    ``vranlc``)."""
    for index in range(count):
        x = _next(x, a)
        out[index] = R46 * x
    return x


@kernel
def power(a: float, exponent: int) -> float:  # pragma: no cover  (compiled)
    """``a^exponent mod 2^46`` by repeated squaring: the multiplier that jumps a stream
    ``exponent`` steps ahead (NPB's ``ipow46``)."""
    result, base = 1.0, a
    while exponent > 0:
        if exponent % 2 == 1:
            result = _next(result, base)
        base = _next(base, base)
        exponent //= 2
    return result


def seed_after(seed: float, steps: int, a: float = A) -> float:
    """The seed ``steps`` draws after ``seed``."""
    return _next(seed, power(a, steps)) if steps else seed

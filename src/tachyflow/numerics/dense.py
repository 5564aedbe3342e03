"""In-place dense BLAS-3 and LAPACK on column-major blocks of a larger array.

numpy's ``@`` and scipy's f2py wrappers copy any block that is not contiguous on its own,
and a block of a column-major local matrix (``a[r0:, c0:c1]``) is not: its columns are
``a.shape[0]`` elements apart. HPL's kernels work on exactly such blocks, so these
wrappers call the BLAS and LAPACK that scipy ships (``scipy.linalg.cython_blas`` and
``cython_lapack``, through their C entry points) with the block's leading dimension, and
update it where it lies: no copies, no temporaries.

Every array argument must be float64, column-major with unit stride down a column (a
Fortran-ordered array or a block of one); ValueError otherwise. The calls release the GIL.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba.extending import get_cython_function_address

_int = ctypes.POINTER(ctypes.c_int)
_double = ctypes.POINTER(ctypes.c_double)
_char = ctypes.c_char_p


def _function(module: str, name: str, *arguments):
    address = get_cython_function_address(f"scipy.linalg.{module}", name)
    return ctypes.CFUNCTYPE(None, *arguments)(address)


_dgemm = _function(
    "cython_blas", "dgemm", _char, _char, _int, _int, _int, _double, _double, _int, _double,
    _int, _double, _double, _int,
)
_dtrsm = _function(
    "cython_blas", "dtrsm", _char, _char, _char, _char, _int, _int, _double, _double, _int,
    _double, _int,
)
_dgetrf = _function("cython_lapack", "dgetrf", _int, _int, _double, _int, _int, _int)
_dlaswp = _function("cython_lapack", "dlaswp", _int, _double, _int, _int, _int, _int, _int)


def _column_major(a: np.ndarray, label: str) -> tuple[ctypes.c_void_p, ctypes.c_int]:
    """Pointer and leading dimension of a column-major float64 block."""
    if not isinstance(a, np.ndarray) or a.dtype != np.float64 or a.ndim != 2:
        raise ValueError(f"{label} must be a 2D float64 array")
    rows, columns = a.shape
    if (rows > 1 and a.strides[0] != 8) or (columns > 1 and a.strides[1] % 8):
        raise ValueError(f"{label} must be column-major (a Fortran array or a block of one)")
    leading = a.strides[1] // 8 if columns > 1 else max(1, rows)
    if leading < max(1, rows):
        raise ValueError(f"{label} must be column-major (a Fortran array or a block of one)")
    return a.ctypes.data_as(_double), ctypes.c_int(leading)


def _i(value: int) -> ctypes.c_int:
    return ctypes.c_int(int(value))


def gemm_update(c: np.ndarray, a: np.ndarray, b: np.ndarray, alpha: float = -1.0) -> None:
    """``c += alpha · a @ b`` in place (HPL's trailing update with ``alpha = -1``)."""
    m, n = c.shape
    k = a.shape[1]
    if a.shape[0] != m or b.shape != (k, n):
        raise ValueError(f"shapes do not match: c {c.shape}, a {a.shape}, b {b.shape}")
    if m == 0 or n == 0 or k == 0:
        return
    pa, lda = _column_major(a, "a")
    pb, ldb = _column_major(b, "b")
    pc, ldc = _column_major(c, "c")
    one = ctypes.c_double(1.0)
    scale = ctypes.c_double(alpha)
    _dgemm(
        b"N", b"N", ctypes.byref(_i(m)), ctypes.byref(_i(n)), ctypes.byref(_i(k)),
        ctypes.byref(scale), pa, ctypes.byref(lda), pb, ctypes.byref(ldb), ctypes.byref(one),
        pc, ctypes.byref(ldc),
    )


def solve_unit_lower(lower: np.ndarray, b: np.ndarray) -> None:
    """``b = L⁻¹ b`` in place, ``L`` the unit lower triangle of the square ``lower``
    (the rows of U from the pivot rows: HPL's ``dtrsm``)."""
    m, n = b.shape
    if lower.shape != (m, m):
        raise ValueError(f"lower must be {m}x{m} for b of shape {b.shape}, got {lower.shape}")
    if m == 0 or n == 0:
        return
    pl, ldl = _column_major(lower, "lower")
    pb, ldb = _column_major(b, "b")
    one = ctypes.c_double(1.0)
    _dtrsm(
        b"L", b"L", b"N", b"U", ctypes.byref(_i(m)), ctypes.byref(_i(n)), ctypes.byref(one),
        pl, ctypes.byref(ldl), pb, ctypes.byref(ldb),
    )


def lu_factor_in_place(a: np.ndarray) -> tuple[np.ndarray, int]:
    """LU with partial pivoting of the ``m × n`` block ``a`` (m >= n) in place (LAPACK
    ``dgetrf``): L below the diagonal (unit), U on and above it.

    Returns the pivots (0-based: row ``i`` was swapped with row ``pivots[i]``, in order)
    and the index of the first exactly zero pivot, or -1 (LAPACK goes on past it without
    dividing; the factors are then those of a singular matrix).
    """
    m, n = a.shape
    if m < n:
        raise ValueError(f"the panel must have at least as many rows as columns, got {a.shape}")
    pivots = np.zeros(max(1, n), dtype=np.intc)
    if n == 0:
        return pivots[:0].astype(np.int64), -1
    pa, lda = _column_major(a, "a")
    info = ctypes.c_int(0)
    _dgetrf(
        ctypes.byref(_i(m)), ctypes.byref(_i(n)), pa, ctypes.byref(lda),
        pivots.ctypes.data_as(_int), ctypes.byref(info),
    )
    if info.value < 0:
        raise ValueError(f"dgetrf rejected argument {-info.value}")
    return pivots.astype(np.int64) - 1, info.value - 1 if info.value > 0 else -1


def swap_rows(a: np.ndarray, first: int, pivots: np.ndarray) -> None:
    """Apply the interchanges ``row first + i <-> row pivots[i]`` (0-based rows of ``a``),
    in order, to every column of ``a`` in place (LAPACK ``dlaswp``)."""
    count = len(pivots)
    if count == 0 or a.shape[1] == 0:
        return
    if first < 0 or first + count > a.shape[0] or np.any((pivots < 0) | (pivots >= a.shape[0])):
        raise ValueError(f"rows out of range for a block of {a.shape[0]} rows")
    # dlaswp reads ipiv(k1 .. k2), 1-based rows.
    ipiv = np.zeros(first + count, dtype=np.intc)
    ipiv[first:] = np.asarray(pivots) + 1
    pa, lda = _column_major(a, "a")
    _dlaswp(
        ctypes.byref(_i(a.shape[1])), pa, ctypes.byref(lda), ctypes.byref(_i(first + 1)),
        ctypes.byref(_i(first + count)), ipiv.ctypes.data_as(_int), ctypes.byref(_i(1)),
    )

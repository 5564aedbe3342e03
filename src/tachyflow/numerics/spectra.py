"""Energy spectra of periodic velocity fields and random solenoidal fields of a given
spectrum (MPI-free: each function works on one piece of the Fourier coefficients).

Coefficients are those of ``u(x) = Σ_k û(k) e^{i k·x}`` on a periodic box; a piece is
given by the integer wavenumbers ``n`` of its points along each axis (``k = 2π n / L``).

* :func:`shell_sums`: ``E(k)`` of a piece, ``½ Σ |û|²`` over the modes whose ``|n|`` rounds
  to each integer shell (with a box of side 2π, ``∫ E dk`` is the kinetic energy).
* :func:`solenoidal_modes`: Rogallo's random field (Rogallo 1981, "Numerical experiments in
  homogeneous turbulence", NASA TM 81315): ``û = a (e^{iθ₁} cos φ e₁ + e^{iθ₂} sin φ e₂)``,
  ``e₁, e₂`` orthonormal and normal to k (divergence-free), ``a`` from ``E(|k|)`` so that
  each shell holds its energy, random phases θ₁, θ₂ and angle φ. Its real part (the
  caller's inverse transform keeps it) is a real solenoidal field of the same spectrum on
  average: the factor √2 in ``a`` restores what the real part halves.
* :func:`log_interpolated`: a tabulated spectrum between its points, and beyond them
  along the power law of its end points.
"""

from __future__ import annotations

import numpy as np


def wavenumber_magnitudes(numbers, lengths) -> tuple[np.ndarray, np.ndarray]:
    """``(k vectors, |k|)`` of a piece: ``numbers`` the integer wavenumbers along each axis
    (three 1D arrays), ``lengths`` the box's sides; k has shape ``(3, n0, n1, n2)``."""
    axes = [2 * np.pi * np.asarray(n, dtype=np.float64) / length
            for n, length in zip(numbers, lengths, strict=True)]
    vectors = np.stack(np.meshgrid(*axes, indexing="ij"))
    return vectors, np.sqrt(np.sum(vectors**2, axis=0))


def shell_sums(coefficients, magnitudes: np.ndarray, shells: int, spacing: float = 1.0):
    """``E`` per shell ``0 .. shells - 1``: ``½ Σ |û|²`` of the components ``coefficients``
    over the modes with ``round(|k| / spacing)`` equal to the shell, divided by
    ``spacing`` (an energy density: ``Σ E spacing`` is the energy). Modes beyond the last
    shell are left out."""
    index = np.rint(magnitudes / spacing).astype(np.int64).ravel()
    energy = sum(0.5 * np.abs(c) ** 2 for c in coefficients).ravel()
    kept = index < shells
    return np.bincount(index[kept], weights=energy[kept], minlength=shells) / spacing


def solenoidal_modes(vectors: np.ndarray, magnitudes: np.ndarray, spectrum: np.ndarray,
                     volume_spacing: float, uniforms: np.ndarray) -> np.ndarray:
    """Rogallo's coefficients ``û`` (shape ``(3, *magnitudes.shape)``, complex) of modes of
    wavevectors ``vectors`` and magnitudes ``magnitudes``; ``spectrum`` is ``E(|k|)`` at
    each mode, ``volume_spacing`` the volume of one mode in k-space (``Π 2π/L``) and
    ``uniforms`` three uniform numbers in [0, 1) per mode (shape ``(3, ...)``: θ₁, θ₂, φ).
    The mean mode is zero."""
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    safe = np.where(magnitudes > 0, magnitudes, 1.0)
    # ½ |û|² per mode = E dk³ / (4π k²); √2 for the real part taken later.
    amplitude = np.where(magnitudes > 0,
                         np.sqrt(2.0 * 2.0 * spectrum * volume_spacing / (4 * np.pi * safe**2)),
                         0.0)
    theta1, theta2 = 2 * np.pi * uniforms[0], 2 * np.pi * uniforms[1]
    phi = 2 * np.pi * uniforms[2]
    # e₁ = k × ẑ / |k × ẑ| (k × x̂ where k is along z), e₂ = k × e₁ / |k|.
    kx, ky, kz = vectors
    along_z = np.hypot(kx, ky) == 0
    first = np.where(along_z, 0.0, ky), np.where(along_z, kz, -kx), np.where(along_z, -ky, 0.0)
    first = np.stack(first)
    first /= np.where(np.linalg.norm(first, axis=0) > 0, np.linalg.norm(first, axis=0), 1.0)
    second = np.cross(vectors, first, axis=0) / safe
    alpha = amplitude * np.exp(1j * theta1) * np.cos(phi)
    beta = amplitude * np.exp(1j * theta2) * np.sin(phi)
    return alpha * first + beta * second


def log_interpolated(k_table: np.ndarray, e_table: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``E(k)`` from a table (increasing ``k_table``, positive ``e_table``), linear in
    ``log k, log E`` between its points and along the power law of its first (last) two
    points below (beyond) them; 0 at k = 0."""
    k_table, e_table = np.asarray(k_table, float), np.asarray(e_table, float)
    if k_table.ndim != 1 or len(k_table) < 2 or np.any(np.diff(k_table) <= 0):
        raise ValueError(f"k_table must increase, with 2 points or more, got {k_table!r}")
    if e_table.shape != k_table.shape or np.any(e_table <= 0):
        raise ValueError(f"e_table must be positive, one value per k, got {e_table!r}")
    log_k, log_e = np.log(k_table), np.log(e_table)
    k = np.asarray(k, dtype=np.float64)
    x = np.log(np.where(k > 0, k, 1.0))
    inside = np.interp(x, log_k, log_e)
    low = log_e[0] + (x - log_k[0]) * (log_e[1] - log_e[0]) / (log_k[1] - log_k[0])
    high = log_e[-1] + (x - log_k[-1]) * (log_e[-1] - log_e[-2]) / (log_k[-1] - log_k[-2])
    values = np.exp(np.where(x < log_k[0], low, np.where(x > log_k[-1], high, inside)))
    return np.where(k > 0, values, 0.0)

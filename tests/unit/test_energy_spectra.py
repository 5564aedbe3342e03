"""Shell spectra and Rogallo's random solenoidal modes (MPI-free pieces)."""

import numpy as np
import pytest

from tachyflow.numerics import spectra


def test_a_single_mode_falls_in_its_shell():
    numbers = [np.fft.fftfreq(8, 1 / 8)] * 3
    _, magnitudes = spectra.wavenumber_magnitudes(numbers, (2 * np.pi,) * 3)
    coefficient = np.zeros((8, 8, 8), complex)
    coefficient[3, 0, 0] = coefficient[-3, 0, 0] = 0.5  # u = cos 3x
    energy = spectra.shell_sums([coefficient, 0 * coefficient, 0 * coefficient], magnitudes, 5)
    np.testing.assert_allclose(energy, [0, 0, 0, 0.25, 0])  # <u²>/2


def test_rogallo_modes_are_solenoidal_with_the_shell_energy():
    n = 24
    numbers = [np.fft.fftfreq(n, 1 / n)] * 3
    vectors, magnitudes = spectra.wavenumber_magnitudes(numbers, (2 * np.pi,) * 3)
    target = magnitudes**2 * np.exp(-magnitudes / 3)
    rng = np.random.default_rng(2)
    modes = spectra.solenoidal_modes(vectors, magnitudes, target, 1.0,
                                     rng.random((3, n, n, n)))
    assert np.abs(np.einsum("a...,a...->...", vectors, modes)).max() < 1e-12
    assert modes[:, 0, 0, 0].tolist() == [0, 0, 0]
    energy = spectra.shell_sums(list(modes), magnitudes, n // 2)
    shells = np.arange(n // 2)
    expected = 2 * shells**2 * np.exp(-shells / 3.0)  # twice: the real part halves it
    # The shells count the modes of a lattice, not a sphere: each within 20 %, their sum
    # within 3 %.
    np.testing.assert_allclose(energy[4:], expected[4:], rtol=0.2)
    assert energy[4:].sum() == pytest.approx(expected[4:].sum(), rel=0.03)


def test_log_interpolation_and_its_power_law_ends():
    k, e = np.array([1.0, 2.0, 4.0]), np.array([1.0, 4.0, 1.0])
    values = spectra.log_interpolated(k, e, np.array([0.0, 0.5, 1.0, 2 ** 0.5, 3.0, 8.0]))
    np.testing.assert_allclose(values, [0, 0.25, 1, 2, 4 * (3 / 2) ** -2, 0.25])
    with pytest.raises(ValueError, match="k_table must increase"):
        spectra.log_interpolated(np.array([2.0, 1.0]), np.array([1.0, 1.0]), 1.0)
    with pytest.raises(ValueError, match="e_table must be positive"):
        spectra.log_interpolated(k, np.array([1.0, 0.0, 1.0]), 1.0)

"""Spectra of acoustic pressure signals: PSD, SPL, one-third-octave bands, OASPL and
directivity (CSV and PNG outputs).

Levels are in dB re 20 µPa. The PSD is Welch's (Hann window, half overlap, a density in
Pa²/Hz); band levels integrate the PSD over the base-10 one-third-octave bands of IEC
61260 (centre frequencies ``1000 · 10^(n/10)`` Hz); OASPL comes from the signal's mean
square, so it agrees with the integral of the PSD (Parseval).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tachyflow.io.figures import new_figure, new_subplots, save_figure
from tachyflow.io.files import replacing

REFERENCE_PRESSURE = 20e-6  # Pa


@dataclass(frozen=True)
class Spectrum:
    """Welch PSD of one signal and what follows from it."""

    frequencies: np.ndarray  # Hz
    psd: np.ndarray  # Pa^2/Hz
    oaspl: float  # dB

    @property
    def spl(self) -> np.ndarray:
        """Narrow-band SPL per frequency bin, dB (``PSD · Δf`` against 20 µPa²)."""
        bin_width = self.frequencies[1] - self.frequencies[0]
        return level(self.psd * bin_width)


def level(mean_square) -> np.ndarray:
    """Sound pressure level in dB of a mean-square pressure (Pa²); -inf for silence."""
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(np.asarray(mean_square, dtype=float) / REFERENCE_PRESSURE**2)


def spectrum(pressure, sample_rate: float, segment: int | None = None) -> Spectrum:
    """Welch PSD (Hann, half overlap) and OASPL of an acoustic pressure time series.

    Raises
    ------
    ValueError
        A signal shorter than 8 samples, not 1D or not finite, or a sample rate that is not
        positive.
    """
    pressure = np.asarray(pressure, dtype=float)
    if pressure.ndim != 1 or pressure.size < 8 or not np.all(np.isfinite(pressure)):
        raise ValueError(
            f"pressure must be a finite 1D series of at least 8 samples, got shape "
            f"{pressure.shape}"
        )
    if not (np.isfinite(sample_rate) and sample_rate > 0):
        raise ValueError(f"sample_rate must be a positive number of Hz, got {sample_rate!r}")
    fluctuation = pressure - pressure.mean()
    segment = min(pressure.size, segment or 256)
    from scipy import signal as scipy_signal  # here: 1 s to import, for every run otherwise

    frequencies, psd = scipy_signal.welch(
        fluctuation, fs=sample_rate, window="hann", nperseg=segment, scaling="density"
    )
    return Spectrum(frequencies, psd, float(level(np.mean(fluctuation**2))))


def third_octave_bands(spectrum_: Spectrum) -> tuple[np.ndarray, np.ndarray]:
    """Centre frequencies (Hz) and levels (dB) of the one-third-octave bands that lie
    within the spectrum's resolved range (above its first bin, below Nyquist)."""
    frequencies, psd = spectrum_.frequencies, spectrum_.psd
    bin_width = frequencies[1] - frequencies[0]
    index = np.arange(-30, 31)
    centres = 1000.0 * 10.0 ** (index / 10.0)
    lower, upper = centres * 10.0 ** (-1 / 20), centres * 10.0 ** (1 / 20)
    keep = (lower >= frequencies[1]) & (upper <= frequencies[-1])
    energies = []
    for low, high in zip(lower[keep], upper[keep], strict=True):
        inside = (frequencies >= low) & (frequencies < high)
        energies.append(psd[inside].sum() * bin_width)
    return centres[keep], level(np.array(energies))


def write_spectra(folder, names: list[str], pressures: np.ndarray, sample_rate: float):
    """``spectra.csv`` (frequency, then PSD per observer), ``bands.csv`` (one-third
    octaves) and ``spectra.png`` for each observer's signal; returns the OASPL per
    observer."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    spectra = [spectrum(p, sample_rate) for p in pressures]
    table = np.column_stack([spectra[0].frequencies, *[s.psd for s in spectra]])
    with replacing(folder / "spectra.csv") as temporary:
        np.savetxt(temporary, table, delimiter=",", header="frequency_Hz," + ",".join(names))
    bands = [third_octave_bands(s) for s in spectra]
    with replacing(folder / "bands.csv") as temporary:
        rows = np.column_stack([bands[0][0], *[b[1] for b in bands]])
        np.savetxt(temporary, rows, delimiter=",", header="centre_Hz," + ",".join(names))
    figure, axis = new_subplots(figsize=(7, 4))
    for name, item in zip(names, spectra, strict=True):
        axis.semilogx(item.frequencies[1:], item.spl[1:], label=f"{name} ({item.oaspl:.1f} dB)")
    axis.set_xlabel("frequency [Hz]")
    axis.set_ylabel("SPL [dB re 20 µPa]")
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8)
    save_figure(figure, folder / "spectra.png")
    return np.array([s.oaspl for s in spectra])


def directivity_plot(path, angles_degrees, oaspl) -> Path:
    """OASPL against the observer angle on a polar plot (an observer arc)."""
    angles = np.radians(np.asarray(angles_degrees, dtype=float))
    figure = new_figure(figsize=(5, 5))
    axis = figure.add_subplot(projection="polar")
    axis.plot(angles, oaspl, marker="o")
    axis.set_title("OASPL [dB re 20 µPa] over the observer arc", fontsize=10)
    return save_figure(figure, path)

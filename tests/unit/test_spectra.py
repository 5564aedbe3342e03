import numpy as np
import pytest

from tachyflow.acoustics.spectra import (
    directivity_plot,
    level,
    spectrum,
    third_octave_bands,
    write_spectra,
)


def test_a_tone_has_its_textbook_level_peak_and_band():
    rate, amplitude = 8192.0, 2.0  # Pa
    times = np.arange(2**14) / rate
    tone = amplitude * np.sin(2 * np.pi * 1000.0 * times)
    result = spectrum(tone, rate, segment=1024)
    # A sine of amplitude A has mean square A²/2: 20 log10(A / (√2 · 20 µPa)) = 97.0 dB.
    assert result.oaspl == pytest.approx(20 * np.log10(amplitude / np.sqrt(2) / 20e-6), abs=1e-6)
    assert result.frequencies[np.argmax(result.psd)] == pytest.approx(1000.0)
    bin_width = result.frequencies[1] - result.frequencies[0]
    assert level(result.psd.sum() * bin_width) == pytest.approx(result.oaspl, abs=0.05)
    centres, bands = third_octave_bands(result)
    assert centres[np.argmax(bands)] == pytest.approx(1000.0)
    assert bands.max() == pytest.approx(result.oaspl, abs=0.1)  # all the energy in one band


def test_spectra_files_and_directivity(tmp_path):
    rate = 4096.0
    times = np.arange(4096) / rate
    signals = np.array([np.sin(2 * np.pi * 200 * times), 0.5 * np.sin(2 * np.pi * 200 * times)])
    oaspl = write_spectra(tmp_path, ["near", "far"], signals, rate)
    assert oaspl[0] - oaspl[1] == pytest.approx(20 * np.log10(2), abs=1e-6)
    table = np.loadtxt(tmp_path / "spectra.csv", delimiter=",")
    assert table.shape[1] == 3 and (tmp_path / "bands.csv").is_file()
    assert (tmp_path / "spectra.png").stat().st_size > 1000
    assert directivity_plot(tmp_path / "arc.png", [0, 45, 90], [90, 88, 80]).is_file()


def test_spectrum_refuses_unusable_signals():
    with pytest.raises(ValueError, match="at least 8 samples"):
        spectrum(np.ones(4), 100.0)
    with pytest.raises(ValueError, match="sample_rate must be a positive"):
        spectrum(np.ones(64), 0.0)
    with pytest.raises(ValueError, match="finite 1D"):
        spectrum(np.full(64, np.nan), 100.0)

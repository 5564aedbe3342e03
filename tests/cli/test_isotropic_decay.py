"""``tachyflow run isotropic-decay``: the spectra at Comte-Bellot & Corrsin's stations,
written beside the measurement, and the run ending at the last station; at 64³ (slow)
the dynamic model's resolved energy within 5 % of the measured at the last station and
the no-model run far from it."""

import json

import pytest

from tests.cli.test_cli import tachyflow


def run(folder, cells, model="dynamic-global", ranks=1, timeout=300):
    result = tachyflow(
        "run", "isotropic-decay", "-n", str(ranks), "--quiet", "-o", str(folder),
        "--set", f"grid.cells=[{cells},{cells},{cells}]", "--set", f"les.model={model}",
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return json.loads((folder / "spectra.json").read_text())


def test_the_spectra_of_every_station_beside_the_measured(tmp_path):
    compared = run(tmp_path, 16, ranks=2)
    assert list(compared) == ["42", "98", "171"]
    assert compared["42"]["time"] == 0.0
    assert 0.85 < compared["42"]["energy_ratio"] < 1.15  # Rogallo's field of station 42
    header = (tmp_path / "spectra.csv").read_text().splitlines()[0]
    assert header == "k,E42,E98,E171"
    assert (tmp_path / "images" / "spectra.png").stat().st_size > 10_000
    log = (tmp_path / "log.txt").read_text()
    assert "the spectrum of the last station (171) taken" in log  # ended there
    statistics = (tmp_path / "stats.csv").read_text().splitlines()
    assert "dynamic_coefficient" in statistics[0]


@pytest.mark.slow
def test_at_64_cubed_the_dynamic_model_decays_as_measured_and_no_model_does_not(tmp_path):
    dynamic = run(tmp_path / "dynamic", 64, timeout=3000)
    assert dynamic["171"]["energy_ratio"] == pytest.approx(1.0, abs=0.05)
    assert dynamic["98"]["energy_ratio"] == pytest.approx(1.0, abs=0.1)
    none = run(tmp_path / "none", 64, model="none", timeout=3000)
    assert none["171"]["energy_ratio"] > 1.3

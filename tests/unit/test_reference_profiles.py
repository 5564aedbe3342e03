"""``[statistics] reference``: the profiles a channel's statistics are compared with."""

import numpy as np
import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.observers.turbulence import _compared, _reference


def test_the_built_in_mkm_profiles_are_moser_kim_and_mansour_s():
    name, columns = _reference(config.load("channel-les-395"))
    assert name == "mkm-395" and len(columns["y_plus"]) == 129
    assert columns["y_plus"][-1] == pytest.approx(392.24)  # their Re_tau
    assert columns["u_plus"][-1] == pytest.approx(20.133, abs=1e-3)  # U+ at the centre
    y, u = columns["y_plus"], columns["u_plus"]
    bulk = np.trapezoid(u, y / y[-1])  # U_b+ = 17.54: Re_b 13,764
    assert bulk == pytest.approx(17.545, abs=1e-3)


def test_the_comparison_is_the_largest_relative_difference_beyond_y_plus_30():
    reference = ("line", {"y_plus": np.array([0.0, 400.0]), "u_plus": np.array([10.0, 20.0])})
    y_plus = np.array([10.0, 40.0, 200.0])
    table = {"y_plus": y_plus, "U_plus": 10 + y_plus / 40 + np.array([5.0, 0.0, 0.3])}
    compared = _compared(reference, table)
    assert compared["U_plus_largest_deviation_beyond_y_plus_30"] == pytest.approx(0.3 / 15)


def test_a_missing_reference_is_named(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text('[statistics]\nevery = 1\nreference = "nowhere.csv"\n')
    with pytest.raises(ConfigError, match=r"'statistics\.reference' must be a built-in data"):
        _reference(config.load(str(case)))
    (tmp_path / "bad.csv").write_text("y,u\n0,0\n")
    case.write_text('[statistics]\nevery = 1\nreference = "bad.csv"\n')
    with pytest.raises(ConfigError, match=r"lacks the columns \['y_plus', 'u_plus'\]"):
        _reference(config.load(str(case)))


def test_the_shipped_isotropic_spectra_decay_as_comte_bellot_and_corrsin_s():
    from importlib import resources

    text = (resources.files("tachyflow") / "data" / "isotropic" / "cbc-1971.csv").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    data = np.genfromtxt(lines, delimiter=",", names=True)
    energies = []
    for station in ("E42", "E98", "E171"):
        measured = np.isfinite(data[station])
        energies.append(np.trapezoid(data[station][measured], data["k"][measured]))
    # ∫E dk = 3 u'²/2 in cm²/s²: 777, 250, 117 over the measured wavenumbers.
    np.testing.assert_allclose(energies, [777.0, 250.0, 117.0], rtol=5e-3)

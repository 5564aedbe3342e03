"""The cylinder-wake observer's statistics on synthetic records: mean drag, lift amplitude
and Strouhal number of a shedding record, the recirculation length of a centreline."""

import math

import numpy as np
import pytest

from tachyflow.observers.cylinder_wake import recirculation_length, wake_statistics


def shedding(time, strouhal=0.165, lift=0.33, drag=1.33):
    """Drag and lift coefficients of an idealised shedding wake (D = U = 1)."""
    phase = 2 * np.pi * strouhal * time
    return drag + 0.01 * np.sin(2 * phase), lift * np.sin(phase + 0.3)


def test_shedding_record_gives_its_strouhal_number_mean_drag_and_lift_amplitude():
    time = np.cumsum(np.full(3000, 0.02) * (1 + 0.2 * np.sin(np.arange(3000))))  # uneven steps
    drag, lift = shedding(time)
    statistics = wake_statistics(time, drag, lift)
    assert statistics["periods"] >= 8
    assert statistics["strouhal"] == pytest.approx(0.165, rel=1e-4)
    assert statistics["strouhal_spectrum"] == pytest.approx(0.165, rel=5e-3)
    assert statistics["drag_mean"] == pytest.approx(1.33, rel=1e-4)
    assert statistics["lift_amplitude"] == pytest.approx(0.33, rel=1e-3)
    assert statistics["drag_amplitude"] == pytest.approx(0.01, rel=1e-2)


def test_scales_with_diameter_and_velocity():
    time = np.linspace(0, 100, 5001)
    drag, lift = shedding(time, strouhal=0.33)  # f = 0.33 / unit time
    statistics = wake_statistics(time, drag, lift, diameter=2.0, velocity=4.0)
    assert statistics["strouhal"] == pytest.approx(0.33 * 2.0 / 4.0, rel=1e-4)


def test_steady_record_has_its_mean_drag_only():
    time = np.linspace(0, 10, 11)
    lift = 1e-12 * np.cos(3 * time)  # round-off: no shedding
    statistics = wake_statistics(time, np.full(11, 1.5), lift)
    assert statistics["periods"] == 0 and statistics["drag_mean"] == 1.5
    assert set(statistics) == {"samples", "periods", "drag_mean", "lift_mean"}


def test_bad_records_are_refused():
    with pytest.raises(ValueError, match="shapes"):
        wake_statistics(np.arange(3.0), np.arange(3.0), np.arange(4.0))


def test_recirculation_length_from_the_rear():
    x = np.linspace(0, 10, 101)
    velocity = np.tanh(x - 5.25)  # zero at 5.25, between faces
    velocity[x < 3.0] = 1.0  # ahead of the body
    assert recirculation_length(x, velocity, 3.0) == pytest.approx(2.25, abs=1e-2)
    assert math.isnan(recirculation_length(x, np.ones_like(x), 3.0))

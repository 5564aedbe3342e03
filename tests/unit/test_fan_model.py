"""The axial fan's scaling model: hand-computed costs, the shape of its predictions, the
Types' order, bad input (its counts against the solver's: tests/parallel)."""

import itertools
import json

import pytest

from tachyflow.bench.fan_model import (
    PAPER,
    TYPES,
    ExchangeTraffic,
    FanScalingModel,
    MeasuredCosts,
    process_grid,
)
from tachyflow.models import Hockney
from tachyflow.models.profiles import profile_document, profile_source, resolve_profile

ALPHA, BETA = 1e-6, 1e-9


def measured(seconds_per_cell=1e-6, shape=(4, 4, 4)):
    return MeasuredCosts(seconds_per_cell, 2e-6, {"A": 1e-6, "B": 1e-6, "C": 5e-7}, shape)


def tiny_model(**changes):
    traffic = ExchangeTraffic(ranks=4, messages=10, peers=2, value_bytes=100, source_bytes=10)
    return FanScalingModel(measured(), Hockney(ALPHA, BETA, "tiny"), exchange=traffic, **changes)


def message(nbytes):
    return ALPHA + nbytes * BETA


def test_a_step_on_a_tiny_grid_costs_what_the_hand_count_gives():
    """64 cells (4³) on 2×2 ranks: 16 cells each."""
    parts = tiny_model().flow_step(64, 4)
    # 24 real transposes over 2 ranks (128 B per rank, one 64 B block to the other), 6 + 12
    # complex ones (4·4·3 modes of 16 B over 4 ranks: 192 B, a 96 B block).
    assert parts["transposes"] == pytest.approx(24 * message(64) + 18 * message(96))
    # 13 halo exchanges, each 2 faces of 6·4 cells along x and along θ: 9 of the velocity
    # (3 per substep, its 3 fields in one message) and 4 of the pressure (1 per substep,
    # the step's pressure).
    assert parts["halos"] == pytest.approx(9 * 4 * message(3 * 192) + 4 * 4 * message(192))
    # 7 allreduces of 2 doubles: recursive doubling, 2 rounds on 4 ranks.
    assert parts["reductions"] == pytest.approx(7 * 2 * message(16))
    assert parts["compute"] == pytest.approx(16e-6)
    assert parts["total"] == pytest.approx(151.296e-6)


def test_core_speed_and_shared_links_scale_what_they_should():
    base, faster = tiny_model().flow_step(64, 4), tiny_model(core_speed=4).flow_step(64, 4)
    assert faster["compute"] == pytest.approx(base["compute"] / 4)
    assert faster["transposes"] == pytest.approx(base["transposes"])
    shared = tiny_model(ranks_per_link=8).flow_step(64, 4)
    assert shared["halos"] == pytest.approx(
        9 * 4 * (ALPHA + 8 * 3 * 192 * BETA) + 4 * 4 * (ALPHA + 8 * 192 * BETA)
    )


def test_a_noise_sample_costs_what_the_hand_count_gives():
    """40 sources on 4 ranks (10 each); the busiest rank sends 10 points to 2 peers."""
    samples = {kind: tiny_model().noise_sample(40, 4, kind) for kind in TYPES}
    assert samples["A"]["exchange"] == pytest.approx(10 * message(100))
    assert samples["B"]["exchange"] == pytest.approx(2 * message(500))
    assert samples["C"]["exchange"] == pytest.approx(2 * message(50))
    assert samples["C"]["local"] == pytest.approx(10 * 5e-7)
    for sample in samples.values():
        assert sample["integration"] == pytest.approx(10 * 2e-6)
        assert sample["reductions"] == pytest.approx(2 * message(16))
    # One rank exchanges nothing.
    assert tiny_model().noise_sample(40, 1, "A")["exchange"] == 0.0


@pytest.mark.parametrize("profile", ["infiniband-qdr", "gigabit-ethernet"])
@pytest.mark.parametrize("seconds_per_cell", [1e-6, 1e-8])
def test_predicted_speedups_grow_with_ranks_and_stay_below_ideal(profile, seconds_per_cell):
    model = FanScalingModel(measured(seconds_per_cell, (48, 24, 24)), profile)
    scaling = model.scaling()
    for series in [scaling["flow"], *scaling["noise"].values()]:
        speedups, ideal = series["speedup"], series["ideal"]
        assert speedups[0] == 1.0
        assert all(b > a for a, b in itertools.pairwise(speedups))
        assert all(s < i for s, i in zip(speedups[1:], ideal[1:], strict=True))
        paper = series["paper"]
        assert paper["predicted_over_paper"] == pytest.approx(paper["predicted"] / paper["value"])


def test_type_c_is_cheaper_than_b_cheaper_than_a_with_the_papers_traffic():
    model = FanScalingModel(measured(1e-7, (48, 24, 24)))
    sources = PAPER["noise"]["sources"]
    for ranks in PAPER["noise"]["ranks"]:
        exchange = {kind: model.noise_sample(sources, ranks, kind)["exchange"] for kind in TYPES}
        assert exchange["C"] < exchange["B"] < exchange["A"]
    ratios = model.scaling()["type_speedup_over_A"]
    assert 1 < ratios["B"]["predicted"] < ratios["C"]["predicted"]


def test_process_grids_are_nearly_square_with_more_rows():
    assert process_grid(6144) == (96, 64)
    assert process_grid(128) == (16, 8)
    assert process_grid(7) == (7, 1)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda m: m.flow_step(64, 0), "ranks"),
        (lambda m: m.flow_step(64, 2.5), "ranks"),
        (lambda m: m.flow_step(3, 4), "cells"),
        (lambda m: m.noise_sample(10, 0, "A"), "ranks"),
        (lambda m: m.noise_sample(-1, 4, "A"), "sources"),
        (lambda m: m.noise_sample(10, 4, "D"), "Type"),
    ],
)
def test_bad_input_is_refused_by_name(call, name):
    with pytest.raises(ValueError, match=name):
        call(tiny_model())


@pytest.mark.parametrize(
    "changes, name",
    [({"core_speed": 0.0}, "core_speed"), ({"ranks_per_link": 0}, "ranks_per_link")],
)
def test_bad_settings_are_refused_by_name(changes, name):
    with pytest.raises(ValueError, match=name):
        tiny_model(**changes)


def test_bad_measurements_are_refused_by_name():
    with pytest.raises(ValueError, match="seconds_per_cell"):
        MeasuredCosts(-1.0, 0.0, {"A": 0, "B": 0, "C": 0}, (4, 4, 4))
    with pytest.raises(ValueError, match="local_per_source"):
        MeasuredCosts(1.0, 0.0, {"A": 0}, (4, 4, 4))
    with pytest.raises(ValueError, match="peers"):
        ExchangeTraffic(peers=0)


def test_the_infiniband_qdr_profile_is_typical_values():
    model = resolve_profile("infiniband-qdr").model
    assert model.alpha == pytest.approx(1.7e-6)
    assert model.bandwidth == pytest.approx(3.2e9)
    assert "typical" in profile_source("infiniband-qdr")


def test_a_fitted_and_calibrated_profile_file_prices_the_transposes(tmp_path):
    """A profile JSON of `tachyflow model fit` with an alltoall calibration (measured twice
    the model's time on 2 ranks) doubles the transposes of the 2×2 grid, nothing else."""
    document = profile_document(Hockney(ALPHA, BETA, "fitted"), {}, "test")
    document["calibration"] = {"alltoall": {"2": {"native": [[1, 2.0], [1 << 30, 2.0]]}}}
    path = tmp_path / "fitted.profile.json"
    path.write_text(json.dumps(document))
    traffic = ExchangeTraffic(ranks=4, messages=10, peers=2, value_bytes=100, source_bytes=10)
    calibrated = FanScalingModel(measured(), path, exchange=traffic).flow_step(64, 4)
    plain = tiny_model().flow_step(64, 4)
    assert calibrated["transposes"] == pytest.approx(2 * plain["transposes"])
    assert calibrated["halos"] == pytest.approx(plain["halos"])


def test_a_flow_and_noise_step_is_the_sum_of_its_parts():
    model = tiny_model()
    step = model.flow_and_noise_step(64, 40, 4, "C")
    assert step["flow"] == pytest.approx(model.flow_step(64, 4)["total"])
    assert step["noise"] == pytest.approx(model.noise_sample(40, 4, "C")["total"])
    assert step["total"] == pytest.approx(step["flow"] + step["noise"])


def test_the_fan_command_names_the_models_default_profile(capsys):
    # The command does not import the model to parse (its default is resolved at run
    # time), so its help names the default in words: they must stay the model's.
    from tachyflow.bench.fan_model import DEFAULT_PROFILE
    from tachyflow.commands import build_parser

    assert build_parser().parse_args(["bench", "fan"]).profile is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "fan", "--help"])
    assert f"default {DEFAULT_PROFILE}," in " ".join(capsys.readouterr().out.split())

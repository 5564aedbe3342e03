import json

import numpy as np
import pytest

from tachyflow.errors import ConfigError
from tachyflow.models import Hockney, LogGP, fit_hockney, fit_loggp, load_profile
from tachyflow.models.loggp import prtt_times
from tachyflow.models.profiles import profile_document

TRUTH = LogGP(1.5e-6, 0.4e-6, 0.9e-6, 1.0 / 6e9, "truth")
SIZES = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]


def records(model=TRUTH, sizes=SIZES, n=16, noise=0.0):
    """PRTT records that ``model`` predicts, the delay twice a round trip as the bench
    chooses it, times scaled by a deterministic ±``noise``."""
    made = []
    for index, size in enumerate(sizes):
        delay = 2.0 * float(prtt_times(model, size, n, 0.0)["prtt_1_0"])
        times = prtt_times(model, size, n, delay)
        scale = 1.0 + noise * np.sin(index + np.arange(3))
        made.append(
            {
                "size": size,
                "n": n,
                "delay": delay,
                **{
                    key: float(times[key]) * s for key, s in zip(sorted(times), scale, strict=True)
                },
            }
        )
    return made


def test_message_time_and_send_occupancy_formulas():
    model = LogGP(2e-6, 0.5e-6, 1.5e-6, 1e-9)
    sizes = np.array([0, 1, 1001, 10**6])
    assert model.message_time(sizes) == pytest.approx([3e-6, 3e-6, 4e-6, 3e-6 + 999999e-9])
    # the gap paces sends, plus the bytes of long messages; never less than the overhead
    expected = [1.5e-6, 1.5e-6, 1.5e-6 + 1000e-9, 1.5e-6 + 999999e-9]
    assert model.send_occupancy(sizes) == pytest.approx(expected)
    assert model.send_occupancy(10**6) == pytest.approx(expected[-1])
    assert (model.alpha, model.beta) == pytest.approx((3e-6, 1e-9))
    assert model.bandwidth == pytest.approx(1e9)
    # half the bandwidth: m / T(m) = 1 / (2 G)
    m = model.half_bandwidth_size
    assert m / float(model.message_time(m)) == pytest.approx(0.5e9)
    hockney = Hockney(2e-6, 1e-9)
    assert hockney.send_occupancy(sizes) == pytest.approx(hockney.message_time(sizes))


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ((-1e-6, 1e-6, 1e-6, 1e-9), "L must be a non-negative number of s"),
        ((1e-6, 1e-6, np.nan, 1e-9), "g must be a non-negative"),
        ((1e-6, 1e-6, 1e-6, -1e-9), "G must be a non-negative number of s/byte"),
        ((0.0, 0.0, 1e-6, 1e-9), "L \\+ 2o must be positive"),
    ],
)
def test_loggp_rejects_bad_parameters(parameters, message):
    with pytest.raises(ValueError, match=message):
        LogGP(*parameters)


def test_fit_recovers_l_o_g_and_big_g_within_one_percent():
    model, quality = fit_loggp(records(noise=0.001))
    for label in ("L", "o", "g", "G"):
        assert getattr(model, label) == pytest.approx(getattr(TRUTH, label), rel=0.01), label
    assert quality["max_relative_error"] < 0.01 and quality["points"] == len(SIZES)
    exact, quality = fit_loggp(records())
    assert exact.to_dict() | {"name": "truth"} == pytest.approx(TRUTH.to_dict())
    assert quality["rms_relative_error"] < 1e-12


def drop(key):
    made = records()
    del made[1][key]
    return made


def edit(index, **values):
    made = records()
    made[index].update(values)
    return made


def shifted(seconds):
    """Every round trip moved by ``seconds``: a negative shift leaves round trips shorter
    than the overheads the delayed trains show."""
    made = records()
    for record in made:
        for key in ("prtt_1_0", "prtt_n_0", "prtt_n_d"):
            record[key] += seconds
    return made


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "at least 3 distinct message sizes, got 0"),
        (records(sizes=[1, 64, 64]), "at least 3 distinct message sizes, got 2"),
        (drop("prtt_n_d"), "PRTT record 1 lacks prtt_n_d"),
        (records(n=1), "n >= 2 messages, got n = 1"),
        (edit(2, prtt_1_0=float("nan")), "finite"),
        (edit(2, delay=0.0), "delays > 0 seconds"),
        (edit(0, prtt_n_0=1e-9), "took no longer than one at 1 B"),
        (edit(3, delay=1e-9), "d must exceed the gap g \\+ \\(s-1\\)G .* at 64 B"),
        (shifted(-4e-6), "negative L"),
    ],
)
def test_fit_rejects_unusable_prtt_data(data, message):
    with pytest.raises(ValueError, match=message):
        fit_loggp(data)


def test_profile_round_trip_gives_the_same_models(tmp_path, monkeypatch):
    data = records()
    loggp = fit_loggp(data, "mine")
    one_way = [r["prtt_1_0"] / 2 for r in data]
    hockney = fit_hockney([r["size"] for r in data], one_way, "mine")
    path = tmp_path / "mine.profile.json"
    path.write_text(json.dumps(profile_document(*hockney, "test", loggp, "loggp")))
    assert load_profile(str(path)) == loggp[0]
    assert load_profile(str(path), model="hockney") == hockney[0]
    monkeypatch.setenv("TACHYFLOW_PROFILE", str(path))
    assert isinstance(load_profile(), LogGP)
    path.write_text(json.dumps(profile_document(*hockney, "test", loggp)))
    assert load_profile(str(path)) == hockney[0]
    path.write_text(json.dumps(profile_document(*hockney, "test")))
    with pytest.raises(ConfigError, match="has no LogGP model"):
        load_profile(str(path), model="loggp")
    with pytest.raises(ConfigError, match="built-in profile 'sp2' has no LogGP"):
        load_profile("sp2", model="loggp")
    with pytest.raises(ValueError, match="default model is loggp but there is no LogGP fit"):
        profile_document(*hockney, "test", None, "loggp")


def test_prtt_sizes_stop_at_one_mebibyte():
    from tachyflow.bench.loggp import prtt_sizes

    assert prtt_sizes(100) == [1, 4, 16, 64]
    assert prtt_sizes(64 * 2**20)[-1] == 2**20

import json
import math

import numpy as np
import pytest

from tachyflow.collectives import schedule_count
from tachyflow.collectives.algorithms import ALGORITHMS, SEGMENTED, build
from tachyflow.collectives.formulas import optimal_pipeline_segments, pipeline_time, predict
from tachyflow.collectives.schedule import Schedule, split, step
from tachyflow.collectives.simulator import ScheduleError, simulate
from tachyflow.errors import ConfigError
from tachyflow.models import Hockney, builtin_profiles, fit_hockney, load_profile

MODEL = Hockney(10e-6, 1e-9)


# 1000 ranks takes 15 s: in make test-slow (the smaller sizes cover every schedule's shape).
@pytest.mark.parametrize(
    "size", [*range(1, 18), 64, 100, pytest.param(1000, marks=pytest.mark.slow)]
)
def test_every_schedule_moves_the_right_data(size):
    for operation, table in ALGORITHMS.items():
        for algorithm in table:
            for count in (1, 5, 37) if size <= 100 else (8,):
                root = (3 * size) // 4
                segments = 3 if algorithm in SEGMENTED else None
                elements = schedule_count(operation, size, count)
                schedule = build(operation, algorithm, size, elements, root, segments)
                simulate(schedule, MODEL, check=True)


def test_tracking_catches_a_broken_schedule():
    def generate():
        yield step([1], [2], 0, 1, False, 0, 3)  # rank 1 has nothing yet

    broken = Schedule("bcast", "broken", 3, 4, 0, split(4, 1), generate)
    with pytest.raises(ScheduleError, match=r"rank 1 sends segments 0\.\.0 to rank 2 before"):
        simulate(broken, MODEL, check=True)

    def twice():
        yield step([1], [0], 0, 1, True, 0, 2)
        yield step([1], [0], 0, 1, True, 0, 2)

    double = Schedule("reduce", "double", 2, 4, 0, split(4, 1), twice)
    with pytest.raises(ScheduleError, match="combines a contribution to segment 0 twice"):
        simulate(double, MODEL, check=True)


@pytest.mark.parametrize("size", [2, 3, 4, 7, 16, 37, 64, 100])
def test_simulator_reproduces_the_closed_forms_exactly(size):
    checked = 0
    for operation, table in ALGORITHMS.items():
        nbytes = schedule_count(operation, size, 1000 * size)
        for algorithm in table:
            for segments in (1, 4, 10) if algorithm in SEGMENTED else (None,):
                try:
                    expected, _ = predict(operation, algorithm, size, nbytes, MODEL, segments)
                except ValueError:  # no closed form (or not for this P)
                    continue
                schedule = build(operation, algorithm, size, nbytes, 0, segments)
                simulated = simulate(schedule, MODEL).time
                assert simulated == pytest.approx(expected, rel=1e-12), (operation, algorithm)
                checked += 1
    assert checked >= 17
    nbytes = 1000 * size
    binomial = simulate(build("bcast", "binomial", size, nbytes), MODEL).time
    assert binomial == pytest.approx(math.ceil(math.log2(size)) * (10e-6 + nbytes * 1e-9))
    for k in (1, 4, 10):
        simulated = simulate(build("bcast", "pipeline", size, nbytes, 0, k), MODEL).time
        assert simulated == pytest.approx((size + k - 2) * (10e-6 + nbytes / k * 1e-9))


def test_tracking_catches_misdelivered_blocks_and_wrong_prefixes():
    def to_the_wrong_block():  # both land in receive block 0, rank 1's block for 0 is lost
        yield step([0, 1], [1, 0], [1, 0], [2, 1], False, 0, 2, landing=[2, 2])

    alltoall = Schedule("alltoall", "broken", 2, 4, 0, split(4, 4), to_the_wrong_block)
    with pytest.raises(ScheduleError, match="rank 0 ends with datum -1 in segment 3, expected 2"):
        simulate(alltoall, MODEL, check=True)

    def too_much():  # rank 1 passes its own value on before rank 0's reached it
        yield step([0, 1], [1, 2], 0, 1, True, 0, 3)

    scan = Schedule("scan", "broken", 3, 4, 0, split(4, 1), too_much)
    with pytest.raises(ScheduleError, match=r"rank 2 ends with contributions of ranks \[1, 2\]"):
        simulate(scan, MODEL, check=True)


def test_critical_path_adds_up_to_the_simulated_time():
    costly = Hockney(10e-6, 1e-9, gamma=0.5e-9, sigma=2e-6)
    for operation, algorithm in [("bcast", "pipeline"), ("allreduce", "ring"), ("scan", "rootp")]:
        result = simulate(build(operation, algorithm, 37, 100_000, 0, 8), costly)
        path = result.critical_path
        total = path["startup"] + path["transfer"] + path["local"] + path["waiting"]
        assert total == pytest.approx(result.time, rel=1e-9), (operation, algorithm)
        assert path["messages"] >= 1 and min(path.values()) >= 0
    chain = simulate(build("bcast", "pipeline", 10, 8000, 0, 4), MODEL).critical_path
    assert chain["messages"] == 4 + 10 - 2 and chain["waiting"] == pytest.approx(0, abs=1e-15)


def test_optimal_pipeline_segments_follow_seed_003():
    sp2 = builtin_profiles()["sp2"]
    size, nbytes = 6144, 1 << 20
    k = optimal_pipeline_segments(size, nbytes, sp2)
    ideal = math.sqrt((size - 2) * nbytes * sp2.beta / sp2.alpha)
    assert abs(k - ideal) < 1
    best = min(range(1, 4 * k), key=lambda s: pipeline_time(size, nbytes, sp2, s))
    assert k == best


def test_fit_recovers_alpha_and_beta_within_one_percent():
    truth = Hockney(3.2e-6, 1.0 / 7.5e9)
    sizes = np.array([2**p + d for p in range(0, 24) for d in (-3, 0, 3) if 2**p + d > 0])
    noise = 1 + 0.002 * np.sin(np.arange(sizes.size))  # deterministic ±0.2 %
    model, quality = fit_hockney(sizes, truth.message_time(sizes) * noise)
    assert model.alpha == pytest.approx(truth.alpha, rel=0.01)
    assert model.beta == pytest.approx(truth.beta, rel=0.01)
    assert quality["max_relative_error"] < 0.01


def test_two_regime_fit_recovers_an_eager_and_a_rendezvous_line():
    from tachyflow.models.hockney import fit_two_regimes

    truth = Hockney(1e-6, 1e-10, threshold=8192, alpha_large=4e-6, beta_large=5e-11)
    sizes = np.array([2**p + d for p in range(0, 24) for d in (-3, 0, 3) if 2**p + d > 0])
    model, quality = fit_two_regimes(sizes, truth.message_time(sizes))
    assert quality["regimes"] == 2 and model.threshold == 8192
    for name in ("alpha", "beta", "alpha_large", "beta_large"):
        assert getattr(model, name) == pytest.approx(getattr(truth, name), rel=0.01), name
    assert model.bandwidth == pytest.approx(2e10)
    straight = Hockney(2e-6, 1e-10)  # one line stays one line
    single, single_quality = fit_two_regimes(sizes, straight.message_time(sizes))
    assert single_quality["regimes"] == 1 and not single.two_regimes
    with pytest.raises(ValueError, match="a second regime needs"):
        Hockney(1e-6, 1e-10, threshold=1024, alpha_large=0.0)


def test_calibration_interpolates_in_log_size(tmp_path):
    from tachyflow.models.profiles import calibration_factor, load_calibration

    calibration = {"reduce": {"2": {"native": [[1024, 2.0], [4096, 4.0]]}}}
    assert calibration_factor(calibration, "reduce", 2, "native", 2048) == pytest.approx(3.0)
    assert calibration_factor(calibration, "reduce", 2, "native", 10**6) == pytest.approx(4.0)
    assert calibration_factor(calibration, "reduce", 3, "native", 2048) == 1.0
    assert calibration_factor(calibration, "reduce", 2, "binomial", 2048) == 1.0
    assert calibration_factor(calibration, "bcast", 2, "native", 2048) == 1.0
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"model": {"alpha": 1e-6, "beta": 1e-9}, "calibration":
                                calibration}))
    assert load_calibration(str(path)) == calibration
    assert load_calibration("sp2") == {}


@pytest.mark.parametrize(
    ("sizes", "times", "message"),
    [
        ([1, 2], [1e-6, 2e-6], "at least 3 distinct"),
        ([1, 2, 4, 8], [1e-6, 1e-6, np.nan, 1e-6], "finite"),
        ([1, 2, 4, 8], [1e-6, -1e-6, 1e-6, 1e-6], "times > 0"),
        ([1, 1000, 10**6, 10**7], [1e-2, 1e-3, 1e-4, 1e-5], "times grow with message size"),
    ],
)
def test_fit_rejects_unusable_data(sizes, times, message):
    with pytest.raises(ValueError, match=message):
        fit_hockney(sizes, times)


def test_profiles(tmp_path, monkeypatch):
    sp2 = load_profile("sp2")
    assert sp2.alpha == pytest.approx(46e-6) and sp2.beta == pytest.approx(0.035e-6)
    assert builtin_profiles()["t3e"].message_time(1000) == pytest.approx(24e-6)
    fitted = tmp_path / "mine.json"
    fitted.write_text(json.dumps({"model": Hockney(2e-6, 1e-10, "mine").to_dict()}))
    monkeypatch.setenv("TACHYFLOW_PROFILE", str(fitted))
    assert load_profile().name == "mine"
    with pytest.raises(ConfigError, match="no profile 'nope'"):
        load_profile("nope")
    with pytest.raises(ValueError, match="alpha must be a positive"):
        Hockney(0.0, 1.0)


def test_simulator_handles_100000_ranks():
    size, nbytes = 100_000, 1 << 20
    sp2 = builtin_profiles()["sp2"]
    binomial = simulate(build("bcast", "binomial", size, nbytes), sp2)
    assert binomial.time == pytest.approx(17 * float(sp2.message_time(nbytes)))
    assert binomial.messages == size - 1


def test_netpipe_sizes_and_iteration_counts():
    from tachyflow.bench.pingpong import iterations_for, netpipe_sizes

    assert netpipe_sizes(16) == [1, 2, 4, 5, 7, 8, 11, 13, 16]
    assert iterations_for(1) == 1000 and iterations_for(64 * 2**20) == 10
    assert iterations_for(2**20) == 64


def test_a_slow_link_gets_fewer_round_trips_per_sample():
    from tachyflow.bench.pingpong import SECONDS_PER_SAMPLE, iterations_within

    assert iterations_within(1000, 1e-6) == 1000  # fast: the byte count decides
    # 1 MiB at 100 Mbit/s: 0.17 s a round trip; never fewer than 10.
    assert iterations_within(64, 0.17) == 10
    assert iterations_within(1000, SECONDS_PER_SAMPLE / 100) == 100


def test_local_costs_slow_the_receivers_down():
    plain = Hockney(1e-6, 1e-9)
    costly = Hockney(1e-6, 1e-9, "costly", gamma=2e-9, delta=1e-9)
    size, count = 8, 4000
    for operation, algorithm, seconds_per_byte in [
        # three rounds of combining, after the input is copied into the result
        ("reduce", "binomial", 3 * 2e-9 + 1e-9),
        ("bcast", "binomial", 0.0),  # broadcast data land in place: no copy
        # input copy, the shift (received through scratch: every rank also sends that
        # range in the step), then 6 hops of combining along the chain of ranks 1..7
        ("exscan", "linear", 1e-9 + 1e-9 + 6 * 2e-9),
    ]:
        schedule = build(operation, algorithm, size, count)
        extra = simulate(schedule, costly).time - simulate(schedule, plain).time
        assert extra == pytest.approx(count * seconds_per_byte), (operation, algorithm)
    with pytest.raises(ValueError, match="closed forms assume no local costs"):
        predict("bcast", "binomial", size, count, costly)


def test_exchange_factor_slows_messages_whose_ends_also_move_data_the_other_way():
    duplex = Hockney(1e-6, 1e-9)
    shared = Hockney(1e-6, 1e-9, "shared", exchange=2.0)
    count = 10_000
    whole = 1e-6 + count * 1e-9
    exchange = build("allreduce", "recursive-doubling", 2, count)
    assert simulate(exchange, duplex).time == pytest.approx(whole)
    assert simulate(exchange, shared).time == pytest.approx(2 * whole)
    one_way = build("bcast", "binomial", 2, count)  # nobody sends and receives at once
    assert simulate(one_way, shared).time == pytest.approx(whole)
    with pytest.raises(ValueError, match="exchange must be a factor between 1 and 2"):
        Hockney(1e-6, 1e-9, exchange=3.0)


def test_auto_picks_native_when_the_executor_overhead_dominates():
    from tachyflow.collectives import choose

    cheap = Hockney(1e-6, 1e-10, "cheap")
    costly = Hockney(1e-6, 1e-10, "costly", sigma=5e-6)
    assert choose("allreduce", 3, 4, 8, cheap).algorithm != "native"
    choice = choose("allreduce", 3, 4, 8, costly)
    assert choice.algorithm == "native"
    assert choice.predictions["native"] < choice.predictions["recursive-doubling"]


def test_resolved_profiles_are_keyed_by_content_not_by_name(tmp_path):
    from tachyflow.models.profiles import MachineProfile, resolve_profile

    calibration = {"allreduce": {"2": {"native": [[1024, 2.0]]}}}
    mine = MachineProfile(Hockney(2e-6, 1e-10, "mine"), calibration)
    theirs = MachineProfile(Hockney(2e-6, 1e-10, "theirs"), calibration)
    assert mine.key == theirs.key and mine == theirs and hash(mine) == hash(theirs)
    assert mine.name == "mine"
    calibration["allreduce"]["2"]["native"][0][1] = 3.0  # the profile keeps its own copy
    assert mine.calibration["allreduce"]["2"]["native"] == [[1024, 2.0]]
    assert MachineProfile(Hockney(2e-6, 1e-10), calibration).key != mine.key
    assert MachineProfile(Hockney(2e-6, 2e-10)).key != MachineProfile(Hockney(2e-6, 1e-10)).key
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"model": Hockney(2e-6, 1e-10, "mine").to_dict()}))
    from_file = resolve_profile(path)  # os.PathLike as well as str
    assert from_file == resolve_profile(Hockney(2e-6, 1e-10)) and from_file.calibration == {}
    assert resolve_profile(from_file) is from_file
    assert resolve_profile("sp2").model == load_profile("sp2")
    with pytest.raises(TypeError, match=r"profile must be a MachineProfile, .* got int"):
        resolve_profile(3)
    with pytest.raises(TypeError, match="model must be a Hockney or LogGP, got str"):
        MachineProfile("sp2")
    with pytest.raises(ConfigError, match="model='loggp' picks the model of a profile file"):
        resolve_profile(Hockney(2e-6, 1e-10), model="loggp")
    path.write_text(json.dumps({"model": {"alpha": 1e-6, "beta": 1e-9}, "calibration": [1]}))
    with pytest.raises(ConfigError, match=r"calibration must be an object .* got list"):
        resolve_profile(str(path))

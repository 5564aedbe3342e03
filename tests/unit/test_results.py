import json

import pytest
from mpi4py import MPI

from tachyflow.bench.report import write_report
from tachyflow.bench.results import new_results, read_results, summarize, write_json
from tachyflow.io.files import replacing


def test_summarize_reports_median_and_min():
    summary = summarize([3.0, 1.0, 2.0, 10.0])
    assert summary["median"] == 2.5
    assert summary["min"] == 1.0
    assert summary["max"] == 10.0
    assert summary["samples"] == [3.0, 1.0, 2.0, 10.0]


def test_results_document_carries_the_context_design_requires():
    document = new_results("demo", {"size": 3}, MPI.COMM_SELF)
    for key in (
        "tachyflow",
        "benchmark",
        "created",
        "machine",
        "mpi",
        "git",
        "params",
        "results",
        "peers",
        "versions",
    ):
        assert key in document
    assert {"host", "cores", "load_avg", "memory"} <= document["machine"].keys()
    assert {"library", "ranks", "ranks_per_node"} <= document["mpi"].keys()
    assert document["mpi"]["ranks"] == 1
    assert "MPI" in document["mpi"]["library"] or "mpi" in document["mpi"]["library"].lower()


def test_write_json_is_atomic_and_leaves_no_temporary(tmp_path):
    import os

    path = write_json(tmp_path / "out.json", {"tachyflow": "0", "benchmark": "x", "v": 1})
    assert read_results(path)["v"] == 1
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # readable like any written file
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_replacing_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "keep.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), replacing(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_read_results_rejects_other_json(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a tachyflow results file"):
        read_results(other)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_results(broken)


def test_report_needs_results(tmp_path):
    with pytest.raises(ValueError, match="no tachyflow results files"):
        write_report(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        write_report(tmp_path / "missing")


def test_step_runs_merge_into_a_strong_scaling_result(tmp_path):
    from tachyflow.bench import scaling

    def step(ranks, seconds, shape=(32, 32, 32)):
        return {
            "benchmark": "step",
            "mpi": {"ranks": ranks},
            "params": {"global_shape": list(shape), "proc_grid": [ranks, 1]},
            "results": [{"name": "tachyflow-step", "verified": True, "median": seconds}],
            "peers": [],
        }

    merged = scaling.merge([step(2, 0.6), step(1, 1.0), step(4, 0.5)])
    assert [e["ranks"] for e in merged["results"]] == [1, 2, 4]
    assert [round(e["speedup"], 6) for e in merged["results"]] == [1.0, round(1 / 0.6, 6), 2.0]
    assert merged["results"][2]["efficiency"] == pytest.approx(0.5)
    assert scaling.plot(merged, tmp_path / "scaling.png").stat().st_size > 0
    with pytest.raises(ValueError, match="one grid"):
        scaling.merge([step(1, 1.0), step(2, 0.5, (64, 64, 64))])


def test_in_transit_readers_get_the_cores_the_ranks_leave():
    from tachyflow.bench.insitu import split_cores

    assert split_cores(1, [0, 1]) == ([0], [1])
    assert split_cores(2, [4, 5, 6, 7]) == ([4, 5], [6, 7])
    assert split_cores(3, [0, 1]) == ([0, 1, 0], [])  # oversubscribed: readers share
    with pytest.raises(ValueError, match="ranks must be >= 1"):
        split_cores(0, [0, 1])


def test_readers_still_waiting_after_the_run_are_stopped_with_a_reason():
    import subprocess
    import sys
    import time

    from tachyflow.bench.insitu import finish_readers

    def reader(code):
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    finish_readers("done", [reader("print('drawn')")], grace=30.0)
    waiting = [reader("print('done')"), reader("import time; time.sleep(60)")]
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"still running 0\.5 s after the run ended.*--steps"):
        finish_readers("short", waiting, grace=0.5)
    assert time.monotonic() - started < 10 and all(p.poll() is not None for p in waiting)
    with pytest.raises(RuntimeError, match=r"(?s)a reader failed \(exit status 3.*gone"):
        finish_readers("failed", [reader("import sys; print('gone'); sys.exit(3)")], 30.0)


def test_a_run_past_the_bench_timeout_is_stopped_with_the_option_to_change():
    from tachyflow.bench.insitu import run_insitu_benchmark

    with pytest.raises(RuntimeError, match=r"run of 2 steps took longer than 0\.2 s.*--timeout"):
        run_insitu_benchmark(1, 8, 2, 1, 1, variants=["none"], timeout=0.2)


@pytest.mark.parametrize(
    ("failure", "reason"),
    [(RuntimeError("reader: a reader failed"), "reader: a reader failed"),
     (KeyboardInterrupt(), "interrupted")],
)
def test_a_failure_after_complete_rounds_keeps_them(monkeypatch, failure, reason):
    from tachyflow.bench import insitu

    calls = []

    def run_variant(name, *arguments):
        calls.append(name)
        if len(calls) == 4:  # the second round's first set-up (the rounds rotate)
            raise failure
        return {"iteration": 0.1 + 0.01 * len(calls), "step": 0.1, "transfer": 0.0,
                "rendering": 0.0, "mpi": "MPICH"}

    monkeypatch.setattr(insitu, "run_variant", run_variant)
    variants = ["transit Discard, 1 reader", "in situ"]
    document = insitu.run_insitu_benchmark(1, 8, 20, 5, 3, variants=variants)
    interrupted = isinstance(failure, KeyboardInterrupt)
    assert document["stopped"] == {"round": 2, "set_up": variants[0], "reason": reason,
                                   "interrupted": interrupted, "rounds_completed": 1}
    assert [len(entry["samples"]) for entry in document["results"]] == [1, 1, 1]
    # Before a complete round there is nothing to keep: the error itself.
    calls[:] = [None, None, None]
    with pytest.raises(type(failure)):
        insitu.run_insitu_benchmark(1, 8, 20, 5, 3, variants=variants)


def test_bench_insitu_saves_the_complete_rounds_and_says_why_it_stopped(monkeypatch, tmp_path):
    from tachyflow.bench import insitu
    from tachyflow.cli import main

    calls = []

    def run_variant(name, *arguments):
        calls.append(name)
        if len(calls) == 3:
            raise RuntimeError("in situ: the run failed:\n[step 7] not finite")
        return {"iteration": 0.1, "step": 0.1, "transfer": 0.0, "rendering": 0.0, "mpi": "-"}

    monkeypatch.setattr(insitu, "run_variant", run_variant)
    arguments = ["bench", "insitu", "-n", "1", "--grid", "8", "--steps", "20", "--repeats", "3"]
    assert main([*arguments, "--variants", "in situ", "-o", str(tmp_path)]) == 1
    (saved,) = tmp_path.glob("insitu_*.json")
    assert json.loads(saved.read_text())["stopped"]["rounds_completed"] == 1


def test_threads_started_on_the_spare_cores_stay_there(monkeypatch):
    import os
    import threading

    from tachyflow import runtime

    binding = os.sched_getaffinity(0)
    spare = frozenset({max(binding)})
    seen = []

    def started():
        seen.append(os.sched_getaffinity(0))

    monkeypatch.setattr(runtime, "_spare_cores", spare)
    with runtime.on_spare_cores():  # a library starting its helper threads
        helper = threading.Thread(target=started)
        helper.start()
    helper.join()
    assert seen == [spare] and os.sched_getaffinity(0) == binding
    monkeypatch.setattr(runtime, "_spare_cores", frozenset())  # not pinned: unchanged
    with runtime.on_spare_cores():
        assert os.sched_getaffinity(0) == binding


def test_visualisation_overhead_pairs_each_run_with_its_rounds_baseline():
    from tachyflow.bench.insitu import paired_overhead

    # The machine slows down over the rounds by far more than the set-up costs: 2 % over
    # each round's baseline, 10 % in one disturbed round.
    baseline = [10.0, 12.0, 14.0, 16.0, 18.0]
    times = [10.2, 12.24, 14.28, 17.6, 18.36]
    overhead = paired_overhead(times, baseline)
    assert overhead["overhead"] == pytest.approx(0.02)
    assert overhead["overhead_quartiles"] == pytest.approx([0.02, 0.02])
    assert overhead["overhead_paired"][3] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="one baseline run per run, got 2 runs and 1"):
        paired_overhead([1.0, 2.0], [1.0])


def test_in_transit_cases_carry_the_streams_precision():
    from tachyflow import config
    from tachyflow.bench.insitu import case_text, run_insitu_benchmark

    for precision in ("single", "double"):
        case = config.parse(case_text(16, 10, 5, "transit", "Discard", precision), "x.toml")
        assert case.insitu.transit_precision == precision
    assert config.parse(case_text(16, 10, 5, None, None), "x.toml").insitu.pipeline == ()
    windows = case_text(16, 10, 5, "transit", "Discard", duty_cycle=(20, 30))
    assert config.parse(windows, "x.toml").insitu.duty_cycle == (20, 30)
    with pytest.raises(ValueError, match="precision must be one of"):
        run_insitu_benchmark(1, 16, 10, 5, 1, precision="half")

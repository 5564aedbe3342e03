"""The CPU time of other processes during a benchmark (bench/load.py), on synthetic /proc."""

import pytest

from tachyflow.bench import load, report, results

# Pids above any pid_max, so that no real process answers for them (sched_getaffinity).
SHELL, LAUNCHER, MPIEXEC, PROXY, RANK0, RANK1, PEER, OTHER = range(90000010, 90000018)


def stat_line(pid, parent, utime, stime=0, cutime=0, cstime=0, comm="python"):
    """A /proc/PID/stat line with the fields load reads, the others zero."""
    middle = " ".join(["S", str(parent)] + ["0"] * 9)
    return f"{pid} ({comm}) {middle} {utime} {stime} {cutime} {cstime} 20 0 1 0\n"


def fake_proc(folder, processes, cpus):
    """A /proc with ``processes`` (pid: (parent, argv, (utime, stime, cutime, cstime)))
    and ``cpus`` (per CPU: user, nice, system, idle, iowait, irq, softirq, steal)."""
    lines = ["cpu " + " ".join(str(sum(c[i] for c in cpus)) for i in range(8))]
    lines += [f"cpu{n} " + " ".join(map(str, c)) + " 0 0" for n, c in enumerate(cpus)]
    (folder / "stat").write_text("\n".join(lines) + "\nintr 0\nctxt 0\n")
    for pid, (parent, argv, ticks) in processes.items():
        (folder / str(pid)).mkdir(exist_ok=True)
        (folder / str(pid) / "stat").write_text(stat_line(pid, parent, *ticks))
        (folder / str(pid) / "cmdline").write_bytes("\0".join(argv).encode() + b"\0")
    return folder


TREE = {  # a shell running `tachyflow bench ... -n 2` beside another user's simulation
    SHELL: (1, ["bash"], (5, 0, 0, 0)),
    LAUNCHER: (SHELL, ["/v/bin/python", "-u", "-m", "tachyflow", "bench", "hpl", "-n", "2"],
               (50, 5, 0, 0)),
    MPIEXEC: (LAUNCHER, ["/v/bin/mpiexec", "-n", "2", "/v/bin/python", "-m", "tachyflow"],
              (1, 1, 0, 0)),
    PROXY: (MPIEXEC, ["/v/bin/hydra_pmi_proxy", "--control-port", "x:1"], (1, 1, 0, 0)),
    RANK0: (PROXY, ["/v/bin/python", "-m", "tachyflow", "bench", "hpl"], (100, 10, 0, 0)),
    RANK1: (PROXY, ["/v/bin/python", "-m", "tachyflow", "bench", "hpl"], (100, 10, 0, 0)),
    PEER: (RANK0, ["mpirun", "-n", "2", "hpcc"], (0, 0, 0, 0)),
    OTHER: (SHELL, ["/v/bin/python", "-m", "pytest", "tests/tachyflow"], (400, 0, 0, 0)),
}


def test_a_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses():
    line = stat_line(7, 3, 11, 22, 33, 44, comm="a) (b c")
    assert load.parse_process_stat(line) == (3, 110)


def test_busy_and_stolen_ticks_are_summed_over_the_chosen_cpus_only():
    text = (
        "cpu  30 3 15 900 9 9 9 6 0 0\n"
        "cpu0 10 1 5 300 3 3 3 2 0 0\n"
        "cpu1 20 2 10 600 6 6 6 4 0 0\n"
        "intr 5 5\n"
    )
    assert load.parse_cpu_times(text) == (48, 6)  # interrupts are not busy time
    assert load.parse_cpu_times(text, [1]) == (32, 4)


@pytest.mark.parametrize(
    ("argv", "belongs"),
    [
        (["/v/bin/tachyflow", "bench", "step"], True),
        (["/v/bin/python", "/v/bin/tachyflow", "bench"], True),
        (["/v/bin/python", "-u", "-m", "tachyflow", "run"], True),
        (["mpiexec.hydra", "-n", "2", "x"], True),
        (["/v/bin/hydra_pmi_proxy", "--control-port", "h:1"], True),
        (["/v/bin/python", "-m", "pytest", "tests/tachyflow"], False),
        (["/v/bin/python", "simulate.py", "tachyflow"], False),
        (["bash"], False),
        ([], False),
    ],
)
def test_job_processes_are_tachyflow_programs_and_mpi_launchers(argv, belongs):
    assert load.is_job_process(argv) is belongs


def test_the_job_is_the_tree_under_the_launching_tachyflow_and_not_its_shell():
    parents = {pid: parent for pid, (parent, _, _) in TREE.items()}
    argvs = {pid: argv for pid, (_, argv, _) in TREE.items()}
    assert load.job_chain(RANK0, parents, argvs) == [RANK0, PROXY, MPIEXEC, LAUNCHER]
    assert load.job_chain(OTHER, parents, argvs) == [OTHER]
    assert load.descendants(LAUNCHER, parents) == {LAUNCHER, MPIEXEC, PROXY, RANK0, RANK1,
                                                   PEER}


def test_other_processes_cpu_is_the_busy_time_less_the_jobs(tmp_path):
    proc = fake_proc(tmp_path, TREE, [(100, 0, 20, 0, 0, 0, 0, 0), (100, 0, 20, 0, 0, 0, 0, 0)])
    since = load.snapshot(proc=proc, pid=RANK0)
    # The fake root is no real process, so it has no affinity: every CPU is counted.
    assert since["root"] == LAUNCHER and since["cpus"] is None
    assert since["chain"] == [RANK0, PROXY, MPIEXEC, LAUNCHER]
    assert (since["busy"], since["job"]) == (240, 55 + 2 + 2 + 110 + 110)
    # Over 2 s: the job takes 200 ticks (100 of them the peer's, which ended and was reaped
    # into rank 0's cutime), the other simulation 100 (0.5 CPU), something no process
    # shows (a kernel thread) 20 more (0.1 CPU); 10 ticks stolen.
    later = {**TREE, RANK0: (PROXY, TREE[RANK0][1], (150, 10, 100, 0)),
             RANK1: (PROXY, TREE[RANK1][1], (150, 10, 0, 0)),
             OTHER: (SHELL, TREE[OTHER][1], (500, 0, 0, 0))}
    del later[PEER]
    proc = fake_proc(tmp_path, later, [(260, 0, 30, 0, 0, 0, 0, 5), (160, 0, 110, 0, 0, 0, 0, 5)])
    (tmp_path / str(PEER) / "stat").unlink()
    now = load.snapshot(since, proc=proc)
    assert (now["root"], now["job"]) == (LAUNCHER, since["job"] + 200)
    record = load.summary(since, {**now, "time": since["time"] + 2.0}, ticks_per_second=100)
    assert record["other_cpu"] == pytest.approx(0.6)
    assert record["all_cpu"] == pytest.approx(1.6)
    assert record["steal"] == pytest.approx(0.05)
    assert record["window"] == pytest.approx(2.0)
    assert record["quiet"] is False and record["threshold"] == load.THRESHOLD
    assert record["since"] == since


def snapshots(busy, job, seconds=10.0):
    since = {"time": 0.0, "busy": 0, "steal": 0, "job": 0, "root": LAUNCHER,
             "chain": [RANK0, PROXY, MPIEXEC, LAUNCHER], "cpus": [0, 1]}
    return since, {**since, "time": seconds, "busy": busy, "job": job}


@pytest.mark.parametrize(
    ("busy", "job", "other", "quiet"),
    [
        (2000, 2000, 0.0, True),    # all the busy time is the job's
        (2050, 2000, 0.05, True),   # at the threshold: still quiet
        (2060, 2000, 0.06, False),  # over it
        (1990, 2000, 0.0, True),    # the job's ticks a little over the CPUs' (rounding)
    ],
)
def test_the_decision_is_other_processes_cpu_against_the_threshold(busy, job, other, quiet):
    record = load.summary(*snapshots(busy, job), ticks_per_second=100)
    assert record["other_cpu"] == pytest.approx(other) and record["quiet"] is quiet
    assert (load.warning(record) is None) is quiet


def test_a_loaded_record_warns_in_one_line_and_marks_the_reports_ratios():
    record = load.summary(*snapshots(2000 + 830, 2000), ticks_per_second=100)
    line = load.warning(record)
    assert "\n" not in line and "loaded machine" in line and "0.83 CPU" in line
    document = {"results": [{"name": "ours", "median": 1.0, "speedup_vs_peer": 9.88}],
                "peers": [], "machine_load": record}
    assert "9.88x (loaded machine)" in report._table(document)
    document["machine_load"] = load.summary(*snapshots(2000, 2000), ticks_per_second=100)
    assert "9.88x<" in report._table(document)


def test_a_window_is_closed_at_its_first_writing_and_again_only_by_its_job_chain():
    since, now = snapshots(2000, 2000)
    closed = load.summary(since, now, ticks_per_second=100)
    assert load.closing({"since": since}, pid=OTHER)  # open: whoever writes it closes it
    assert load.closing(closed, pid=RANK0)  # rank 0 writing it again
    assert load.closing(closed, pid=LAUNCHER)  # the launcher, after running the peer
    assert not load.closing(closed, pid=OTHER)  # a report, a merge by another job
    assert not load.closing(None, pid=RANK0)  # no /proc when it was measured


def test_writing_closes_a_window_and_warns_in_one_line_when_loaded(tmp_path, monkeypatch,
                                                                  capsys):
    document = {"tachyflow": "x", "benchmark": "b", "machine_load": {"since": load.start()}}
    results.write_json(tmp_path / "a.json", document)
    record = document["machine_load"]
    assert {"other_cpu", "steal", "all_cpu", "window", "quiet", "threshold"} <= record.keys()
    assert record["job_root"] == record["since"]["chain"][-1]
    assert capsys.readouterr().err == ("" if record["quiet"] else load.warning(record) + "\n")
    loaded = load.summary(*snapshots(3000, 2000), ticks_per_second=100)
    monkeypatch.setattr(load, "finish", lambda since: loaded)
    results.write_json(tmp_path / "b.json", document)  # written again by its measurer
    assert results.read_results(tmp_path / "b.json")["machine_load"] == loaded
    assert capsys.readouterr().err == load.warning(loaded) + "\n"
    results.write_json(tmp_path / "c.json", {**document, "machine_load": loaded})
    assert capsys.readouterr().err == ""  # written by a process outside its chain: kept

"""The monitor stream (ADIOS2 SST): what a reader gets, and that publishing never waits.

Readers run in a child process: attaching blocks until the publisher's next step and the
binding holds the interpreter lock meanwhile, so a reader and its publisher cannot share a
process.
"""

import io
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from tachyflow.insitu.monitor import (
    MonitorPublisher,
    MonitorReader,
    contact_file,
    publisher_alive,
)

# Generous bounds for a shared two-core machine: what they rule out is waiting for a
# reader (that would be seconds, or forever), not scheduling noise.
TYPICAL_PUBLISH = 0.005
SLOWEST_PUBLISH = 0.1


def make_png(width: int, shade: int) -> bytes:
    """A small RGB gradient; the width varies the file's size from step to step."""
    ramp = np.linspace(0, 255, width, dtype=np.uint8)
    pixels = np.stack([np.tile(ramp, (12, 1)), np.full((12, width), shade % 256, np.uint8),
                       np.tile(ramp[::-1], (12, 1))], axis=-1)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def expected_metrics(step: int) -> dict[str, float]:
    """A set of metrics that changes from step to step, in changing order."""
    if step % 3 == 0:
        return {}
    if step % 3 == 1:
        return {"cfl": 0.25 + step, "kinetic_energy": 1.0 / step}
    return {"time_per_step": 0.001 * step, "kinetic_energy": 1.0 / step, "cfl": 0.5 + step}


def read_states(run_dir, connection) -> None:
    """Child process: attach, report, stop reading until told, then read to the end."""
    with MonitorReader(run_dir, timeout=30) as reader:
        first = None
        while first is None:
            first = reader.latest()
            time.sleep(0.005)
        connection.send(first.step)
        connection.recv()  # the reader stalls here, attached, reading nothing
        states = []
        deadline = time.monotonic() + 60
        while not reader.finished and time.monotonic() < deadline:
            state = reader.latest()
            if state is not None:
                states.append(state)
            time.sleep(0.005)
        connection.send((states, reader.finished))


def publish_past_a_held_step(run_dir, connection) -> None:
    """Child process: publish until a reader holds a step, then time 100 more publishes."""
    with MonitorPublisher(run_dir, queue_limit=2) as publisher:
        step = 0
        while not connection.poll():  # fillers, until the reader holds one of them
            publisher.publish(step, 0.0, {}, {})
            step += 1
            time.sleep(0.01)
        connection.recv()
        costs = []
        for step in range(1000, 1100):
            costs.append(timed_publish(publisher, step, {"slices": make_png(40, step)}))
            time.sleep(0.005)
        connection.send(costs)
        connection.recv()  # closing waits for readers to release their steps
        started = time.perf_counter()
    connection.send(time.perf_counter() - started)


@pytest.fixture
def start_child(tmp_path):
    """Start ``target(tmp_path/run, connection)`` in a child process.

    Returns the parent's end of the pipe; the child is joined (killed if it hangs) after
    the test.
    """
    context = multiprocessing.get_context("spawn")
    processes = []

    def start(target):
        parent, child = context.Pipe()
        process = context.Process(target=target, args=(str(tmp_path / "run"), child))
        process.start()
        processes.append(process)
        return parent

    yield start
    for process in processes:
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()


def publish_until_attached(publisher, connection) -> None:
    """Publish filler steps (numbered below 1000) until the reader has received one."""
    step = 0
    while not connection.poll():
        publisher.publish(step, 0.0, {}, {})
        step += 1
        time.sleep(0.01)
    connection.recv()


def timed_publish(publisher, step: int, images: dict[str, bytes]) -> float:
    started = time.perf_counter()
    publisher.publish(step, 0.01 * step, expected_metrics(step), images)
    return time.perf_counter() - started


def test_publish_returns_at_once_without_a_reader(tmp_path):
    # Noise does not compress: about 100 kB, the size of a rendered slice figure.
    noise = np.random.default_rng(7).integers(0, 256, (180, 180, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format="PNG")
    large = buffer.getvalue()
    with MonitorPublisher(tmp_path / "run") as publisher:
        assert contact_file(tmp_path / "run").exists()
        assert publisher_alive(tmp_path / "run") is True
        costs = [timed_publish(publisher, step, {"slices": large}) for step in range(1, 201)]
    assert not contact_file(tmp_path / "run").exists()
    assert publisher_alive(tmp_path / "run") is False
    assert np.median(costs) < TYPICAL_PUBLISH
    assert max(costs) < SLOWEST_PUBLISH


def test_publish_does_not_wait_for_a_reader_that_stopped_reading(tmp_path, start_child):
    import adios2
    from adios2 import bindings

    # The publisher runs in the child: if publish() waited, this test fails instead of
    # hanging with the interpreter lock held inside SST.
    publisher = start_child(publish_past_a_held_step)
    # A plain SST reader, as another tool would open the stream (every step, none skipped):
    # it takes one step and holds it. With QueueFullPolicy=Block the publisher's third
    # step from there would wait for it.
    stream_io = adios2.Adios().declare_io("another tool")
    stream_io.set_engine("SST")
    stream_io.set_parameters({"OpenTimeoutSecs": "30"})
    stream = adios2.Stream(stream_io, str(tmp_path / "run" / "monitor"), "r")
    try:
        while stream.begin_step(timeout=10.0) != bindings.StepStatus.OK:
            pass
        publisher.send("holding a step")
        assert publisher.poll(60), "publish() waited for the reader"
        costs = publisher.recv()
        stream.end_step()
    finally:
        stream.close()
    assert np.median(costs) < TYPICAL_PUBLISH
    assert max(costs) < SLOWEST_PUBLISH
    publisher.send("released")
    assert publisher.poll(10), "close() waited although the reader had let go"
    assert publisher.recv() < 2.0


def test_round_trip_pairs_names_with_values_and_keeps_the_newest_images(tmp_path, start_child):
    reader = start_child(read_states)
    pngs = {}

    def publish(step):
        images = {}
        if step % 4 == 1:  # images rarer than steps, their size changing
            pngs[step] = make_png(20 + step % 50, 7 * step)
            images = {"slices": pngs[step]}
        publisher.publish(step, 0.01 * step, expected_metrics(step), images)

    with MonitorPublisher(tmp_path / "run") as publisher:
        publish_until_attached(publisher, reader)
        for step in range(1001, 1021):  # while the reader reads nothing
            publish(step)
            time.sleep(0.005)
        time.sleep(0.3)  # the last step's announcement reaches the reader
        reader.send("read")
        time.sleep(0.3)
        for step in range(1021, 1061):
            publish(step)
            time.sleep(0.03)
    states, finished = reader.recv()
    assert finished
    steps = [state.step for state in states]
    assert steps == sorted(set(steps))
    states = [state for state in states if state.step > 1000]  # after the fillers
    steps = [state.step for state in states]
    assert steps[0] == 1020  # straight to the newest step after the stall
    assert set(steps[1:]) <= set(range(1021, 1061))
    assert len(steps) >= 20  # a reader polling every 5 ms misses few of 40 steps at 30 ms
    for state in states:
        assert state.time == pytest.approx(0.01 * state.step)
        assert state.metrics == expected_metrics(state.step)
        rendered = max(step for step in pngs if step <= state.step)
        assert state.image_steps == {"slices": rendered}
        assert state.images == {"slices": pngs[rendered]}


def test_reader_refuses_a_missing_or_abandoned_stream(tmp_path):
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no monitor stream"):
        MonitorReader(tmp_path / "nothing", timeout=0.3)
    assert time.monotonic() - started < 2.0
    # A run killed while publishing leaves its contact file behind.
    killed = subprocess.run(
        [sys.executable, "-c", "import os, signal, sys\n"
         "from tachyflow.insitu.monitor import MonitorPublisher\n"
         "publisher = MonitorPublisher(sys.argv[1])\n"
         "os.kill(os.getpid(), signal.SIGKILL)", str(tmp_path / "killed")],
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL
    assert contact_file(tmp_path / "killed").exists()
    assert publisher_alive(tmp_path / "killed") is False
    with pytest.raises(ConnectionError, match="no longer publishing"):
        MonitorReader(tmp_path / "killed", timeout=1.0)


def test_publish_and_open_check_their_input(tmp_path):
    with pytest.raises(ValueError, match="queue_limit"):
        MonitorPublisher(tmp_path / "zero", queue_limit=0)
    with pytest.raises(TypeError, match="queue_limit"):
        MonitorPublisher(tmp_path / "text", queue_limit="2")
    with pytest.raises(ValueError, match="timeout"):
        MonitorReader(tmp_path / "run", timeout=-1)
    png = make_png(8, 0)
    with MonitorPublisher(tmp_path / "run") as publisher:
        with pytest.raises(TypeError, match="step"):
            publisher.publish(True, 0.0, {}, {})
        with pytest.raises(TypeError, match="time"):
            publisher.publish(1, "0", {}, {})
        with pytest.raises(TypeError, match="metrics"):
            publisher.publish(1, 0.0, {"cfl": "high"}, {})
        with pytest.raises(ValueError, match="image name"):
            publisher.publish(1, 0.0, {}, {"../slices": png})
        with pytest.raises(ValueError, match="not a PNG"):
            publisher.publish(1, 0.0, {}, {"slices": b"GIF89a" + bytes(16)})
        with pytest.raises(TypeError, match="PNG bytes"):
            publisher.publish(1, 0.0, {}, {"slices": "picture"})
        publisher.publish(1, 0.0, {"cfl": 0.5}, {"slices": png})  # and it still publishes
    with pytest.raises(ValueError, match="closed"):
        publisher.publish(2, 0.0, {}, {})
    assert os.listdir(tmp_path / "run") == []

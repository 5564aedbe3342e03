"""Transit readers and writers in separate processes: timeouts, stale and second writers,
detaching and attaching again, and the EVPath CManager IDs that must differ between
streams.

Writers and readers that open SST streams run as peers (``tests/transit_peer.py``): a
reader cannot share a process with the writer it reads (the binding keeps the
interpreter lock while it waits). This process only builds writers that are refused and
readers that time out, neither of which opens a stream.
"""

import json
import signal
import time

import pytest
from mpi4py import MPI

from tachyflow.insitu.transit import (
    StreamInUseError,
    TransitReader,
    TransitWriter,
    transit_folder,
    writer_alive,
)
from tachyflow.insitu.transit.sst import clashing, cmanager_id, lookup3
from tachyflow.parallel import PencilDecomposition
from tests.transit_peer import WRITER_FIELDS, WRITER_SHAPE, log_lines, peer_process, wait_until


def written(log) -> list[tuple[int, float]]:
    """(step, seconds) of every write a writer peer logged."""
    lines = [line.split() for line in log_lines(log) if line.startswith("wrote ")]
    return [(int(step), float(seconds)) for _, step, seconds in lines]


def steps_read(log) -> list[int]:
    return [int(line.split()[1]) for line in log_lines(log) if line.startswith("step ")]


def test_reader_waits_for_a_writer_until_its_timeout(tmp_path):
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"after 0\.5 s: no manifest\.json yet"):
        TransitReader(tmp_path / "run", timeout=0.5)
    assert 0.5 <= time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((3,), TypeError, "run_dir must be a path, got 3"),
        (("run", 0), ValueError, "timeout must be a positive number of seconds or None, got 0"),
        (("run", -1.0), ValueError, "got -1.0"),
        (("run", True), ValueError, "got True"),
    ],
)
def test_reader_arguments_are_checked(arguments, error, message):
    with pytest.raises(error, match=message):
        TransitReader(*arguments)


def test_second_writer_is_refused_and_a_dead_writers_stream_is_taken_over(tmp_path):
    run_dir = tmp_path / "run"
    stream = transit_folder(run_dir) / "stream-0"
    with PencilDecomposition(WRITER_SHAPE, comm=MPI.COMM_SELF) as decomposition:
        with peer_process("write", run_dir, tmp_path / "first.log", interval=0.05) as first:
            assert wait_until(lambda: written(tmp_path / "first.log"), 30)
            assert writer_alive(stream) is True
            with pytest.raises(StreamInUseError, match=f"live writer \\(pid {first.pid} on "):
                TransitWriter(decomposition, run_dir, WRITER_FIELDS)
            first.send_signal(signal.SIGKILL)
        # What a killed writer leaves: its contact file, its manifest, an unheld lock.
        contact = stream.with_name("stream-0.sst")
        left = contact.read_text()
        assert writer_alive(stream) is False
        with pytest.raises(TimeoutError, match="no live writer"):
            TransitReader(run_dir, timeout=0.5)

        with (
            peer_process("write", run_dir, tmp_path / "second.log", interval=0.05) as second,
            peer_process("read", run_dir, tmp_path / "reader.log", max_steps=3),
        ):
            assert wait_until(lambda: "closed" in log_lines(tmp_path / "reader.log"), 30)
            holder = json.loads(stream.with_name("stream-0.lock").read_text())
            taken_over = contact.read_text()
            second.send_signal(signal.SIGKILL)  # attached readers have detached
    assert "refused" not in " ".join(log_lines(tmp_path / "second.log"))
    assert holder["pid"] == second.pid
    assert taken_over != left  # the new writer's contact, not the dead one's
    assert len(steps_read(tmp_path / "reader.log")) == 3


def test_readers_detach_and_attach_again_while_the_writer_goes_on(tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "writer.log"
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    with peer_process("write", run_dir, log, interval=0.05) as writer:
        assert wait_until(lambda: written(log), 30)
        with peer_process("read", run_dir, first, max_steps=3):
            assert wait_until(lambda: "closed" in log_lines(first), 30)
        detached = len(written(log))
        # The writer goes on alone, then a new reader attaches to it.
        assert wait_until(lambda: len(written(log)) >= detached + 5, 30)
        with peer_process("read", run_dir, second, max_steps=3):
            assert wait_until(lambda: "closed" in log_lines(second), 30)
        assert wait_until(lambda: len(written(log)) >= detached + 10, 30)
        writer.send_signal(signal.SIGKILL)
    assert len(steps_read(first)) == 3
    assert min(steps_read(second)) > max(steps_read(first))
    # Attaching and detaching never held a write up (a wait would take seconds).
    assert max(seconds for _, seconds in written(log)) < 0.5


def evpath_cmanager_id(seed: int) -> int:
    """What EVPath's ``srand48(seed); (int) lrand48()`` gives (POSIX drand48 family)."""
    state = ((seed & 0xFFFFFFFF) << 16) | 0x330E
    state = (0x5DEECE66D * state + 0xB) % 2**48
    return state >> 17


def test_attribute_atoms_hash_like_lookup3():
    # Vectors of lookup3.c's own driver, then the atoms seen in SST contact files.
    assert lookup3(b"") == 0xDEADBEEF
    assert lookup3(b"Four score and seven years ago") == 0x17770551
    assert lookup3(b"IP_PORT") == 0x8DF2C994
    assert lookup3(b"IP_ADDR") == 0x98023901


def test_contact_file_gives_the_cmanager_id_seeded_from_pid_and_time(tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "writer.log"
    opened_after = int(time.time())
    with peer_process("write", run_dir, log, interval=0.05) as writer:
        assert wait_until(lambda: written(log), 30)
        opened_before = int(time.time())
        identity = cmanager_id(transit_folder(run_dir) / "stream-0.sst")
        writer.send_signal(signal.SIGKILL)
    seconds = range(opened_after, opened_before + 1)
    assert identity in {evpath_cmanager_id(writer.pid + second) for second in seconds}
    assert cmanager_id(tmp_path / "missing.sst") is None


def test_clashing_identities_are_the_repeated_ones():
    assert clashing([7, None, 7, 3, None, 3, 5]) == {2, 5}
    assert clashing([None, None, 1]) == set()

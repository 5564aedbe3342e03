"""Where a run's transit streams live, and the lock that gives each stream one writer.

``RUN_DIR/transit/`` holds, for aggregator ``g``, ``stream-<g>.sst`` (SST's contact file,
there while the stream is open) and ``stream-<g>.lock`` (locked by the live writer, never
removed). SST itself lets a second writer replace a live writer's contact file without
error, and a killed writer leaves its contact file behind, so the lock decides who writes
and whether a contact file may be trusted (see ``docs/in-transit.md``).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time as clock
from pathlib import Path

from tachyflow.errors import TachyflowError

FOLDER = "transit"
# Readers take a stream's lock for a moment to test it (writer_alive): a writer starting
# meanwhile retries this long before it calls the stream busy.
LOCK_PATIENCE = 1.0


class StreamInUseError(TachyflowError, RuntimeError):
    """A transit stream already has a live writer (another run writes to the same folder)."""


def transit_folder(run_dir) -> Path:
    """``RUN_DIR/transit``: manifest, streams, contact files and locks."""
    return Path(run_dir) / FOLDER


def stream_name(group: int) -> str:
    """The name of aggregator ``group``'s stream inside the transit folder."""
    return f"stream-{group}"


def lock_path(stream: Path) -> Path:
    """The lock file of ``stream`` (a path without suffix)."""
    return stream.with_name(stream.name + ".lock")


def contact_path(stream: Path) -> Path:
    """SST's contact file of ``stream`` (a path without suffix)."""
    return stream.with_name(stream.name + ".sst")


def writer_alive(stream) -> bool | None:
    """Whether a live writer holds the lock of ``stream`` (a path without ``.sst``) and has
    opened it.

    False without a lock file, with nobody holding it or while its writer is still opening
    the stream; None when the file system has no locks (then nobody can tell).
    """
    try:
        descriptor = os.open(lock_path(Path(stream)), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return os.fstat(descriptor).st_size > 0  # the writer's details: its stream is open
    except OSError:
        return None
    finally:
        os.close(descriptor)  # also drops the shared lock, if taken
    return False


class StreamLock:
    """The exclusive ``flock`` a writer holds on ``stream-<g>.lock`` while it lives.

    The system drops it when the process ends, however it ends. It is per open file, so a
    second writer in the same process is refused as well. On a file system without
    ``flock`` (some network mounts) nothing is held and nothing is checked.

    Parameters
    ----------
    stream : Path
        The stream (a path without suffix).

    Raises
    ------
    StreamInUseError
        Another writer holds the lock after :data:`LOCK_PATIENCE` seconds.
    """

    def __init__(self, stream: Path):
        path = lock_path(stream)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        patience = clock.monotonic() + LOCK_PATIENCE
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if clock.monotonic() < patience:
                    clock.sleep(0.05)
                    continue
                os.close(descriptor)
                raise StreamInUseError(
                    f"{stream} already has a live writer ({_holder(path)}); stop that run "
                    "or write to another run directory"
                ) from None
            except OSError:  # no locks on this file system: nothing to hold
                os.close(descriptor)
                self._descriptor = None
                return
        # Empty until publish(): the details of a dead writer must not vouch for its
        # contact file, which the new writer is about to replace.
        os.ftruncate(descriptor, 0)
        self._descriptor = descriptor

    def publish(self) -> None:
        """Record this process as the writer, once its contact file is in place."""
        if self._descriptor is not None:
            holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": clock.time()}
            os.write(self._descriptor, json.dumps(holder).encode())

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def _holder(path: Path) -> str:
    """Who holds the lock at ``path``, in words."""
    try:
        text = path.read_text()
        if not text:
            return "it is still opening its stream"
        holder = json.loads(text)
        since = clock.strftime("%Y-%m-%d %H:%M:%S", clock.localtime(holder["since"]))
        return f"pid {holder['pid']} on {holder['host']}, since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its details are unreadable"

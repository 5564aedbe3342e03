"""Numba kernels that processes starting together compile once.

``@kernel`` (or ``@kernel(parallel=True, ...)``) is ``numba.njit(cache=True, ...)`` with
one difference: a process that finds no compiled code in numba's on-disk cache takes the
function's lock file (next to the cache's index) and looks again before compiling. The
ranks of a job, or a test suite's workers, reach the same kernels at the same moment on a
fresh installation; with plain ``cache=True`` every one of them compiles every kernel
(seconds each, hundreds of kernel-seconds in all), with the lock one compiles and the
others wait for it and load its code. Nothing changes once the cache is warm: a hit takes
no lock.

The lock is ``flock`` on a local file: processes of one node share it; on a file system
without working ``flock`` each process compiles as numba does alone. A process waits at
most :data:`LOCK_WAIT_SECONDS` for another's compile before compiling itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time

import numba
from numba.core import event
from numba.core.caching import FunctionCache

#: Longest wait for another process's compile of a function (seconds): past it this
#: process compiles the function itself, as without the lock.
LOCK_WAIT_SECONDS = 300.0
_POLL_SECONDS = 0.02


def _locked(path: str, wait: float) -> int | None:
    """A descriptor holding an exclusive ``flock`` on ``path``, or None when the file
    cannot be opened or another process holds it for longer than ``wait`` seconds."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return descriptor
        except BlockingIOError:
            if time.monotonic() > deadline:
                break
            time.sleep(_POLL_SECONDS)
        except OSError:  # no flock on this file system
            break
    os.close(descriptor)
    return None


class OneCompilerCache(FunctionCache):
    """numba's per-function cache whose misses are compiled by one process at a time.

    A miss takes the function's lock file and loads again (another process may have
    saved the code meanwhile); the lock is held through the compile and released once
    the code is saved, or when the compile fails.
    """

    _held: int | None = None

    def load_overload(self, sig, target_context):
        data = super().load_overload(sig, target_context)
        if data is not None or not self._enabled or self._held is not None:
            return data
        with contextlib.suppress(OSError):
            self._impl.locator.ensure_cache_path()
        lock = os.path.join(self.cache_path, self._impl.filename_base + ".lock")
        self._held = _locked(lock, LOCK_WAIT_SECONDS)
        if self._held is None:
            return None
        data = super().load_overload(sig, target_context)
        if data is not None:
            self.release()
        return data

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        finally:
            self.release()

    def release(self) -> None:
        """Let other processes compile or load this function (no-op if not held)."""
        if self._held is not None:
            os.close(self._held)  # closing the descriptor drops its flock
            self._held = None


class _ReleaseAfterFailedCompile(event.Listener):
    """Releases a kernel's lock when its compile raises (save_overload is then not
    called), so that other processes need not wait for :data:`LOCK_WAIT_SECONDS`."""

    def on_start(self, event_):
        pass

    def on_end(self, event_):
        # Not Event.is_failed: it is true when no exception was raised (numba 0.68). After
        # a successful compile the lock is kept until the code is saved.
        if getattr(event_, "_exc_details", None) is None:
            return
        cache = getattr(event_.data.get("dispatcher"), "_cache", None)
        if isinstance(cache, OneCompilerCache):
            cache.release()


event.register("numba:compile", _ReleaseAfterFailedCompile())


def kernel(function=None, **options):
    """``numba.njit(cache=True, **options)``, the cache's misses compiled by one process
    at a time (see the module). Use as ``@kernel`` or ``@kernel(parallel=True)``."""
    if "cache" in options:
        raise TypeError("kernel() always caches; do not pass cache=")

    def compile_lazily(python_function):
        dispatcher = numba.njit(**options)(python_function)
        dispatcher._cache = OneCompilerCache(dispatcher.py_func)  # what cache=True sets
        return dispatcher

    return compile_lazily if function is None else compile_lazily(function)

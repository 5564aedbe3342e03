"""Kernels that processes starting together compile once (tachyflow.numerics.compiled)."""

import fcntl
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numba
import numpy as np
import pytest

from tachyflow.numerics.compiled import kernel

MODULE = """
from tachyflow.numerics.compiled import kernel

@kernel(error_model="numpy")
def total(values):
    result = 0.0
    for value in values:
        result += value * value
    return result
"""

# Waits until the start time given, calls the kernel, prints its cache misses.
CALLER = """
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import counted
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
assert counted.total(np.arange(4.0)) == 14.0
print(sum(counted.total.stats.cache_misses.values()))
"""


def test_processes_starting_together_compile_a_kernel_once(tmp_path):
    (tmp_path / "counted.py").write_text(MODULE)
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    start = time.time() + 3.0  # both imported and waiting by then
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    processes = [
        subprocess.Popen(
            [sys.executable, str(caller), str(tmp_path), repr(start)],
            env=environment,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    misses = sorted(int(process.communicate(timeout=120)[0]) for process in processes)
    assert all(process.returncode == 0 for process in processes)
    # One compiled it (a cache miss), the other waited and loaded it.
    assert misses == [0, 1]


def test_a_failed_compile_releases_the_lock(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "broken.py").write_text(
        textwrap.dedent(
            """
            from tachyflow.numerics.compiled import kernel

            @kernel
            def broken(values):
                return values.no_such_attribute
            """
        )
    )
    import broken

    with pytest.raises(numba.TypingError):
        broken.broken(np.zeros(3))
    locks = list(Path(broken.broken._cache.cache_path).glob("broken.broken-*.lock"))
    assert len(locks) == 1
    with open(locks[0]) as lock:  # another process could take it at once
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_kernel_always_caches():
    with pytest.raises(TypeError, match="always caches"):
        kernel(cache=False)

"""runtime.keep_freed_memory: a block allocated and freed each step is not faulted in again."""

import platform
import subprocess
import sys

import pytest

from tachyflow import runtime
from tests.processes import command_environment

# Allocate, touch and free a 48 MB block through malloc ten times (as SST does with a step's
# buffer), optionally after keep_freed_memory; print the page faults of the last nine.
FAULTS = """
import ctypes, resource, sys
from tachyflow import runtime
size = 48 * 2**20
if sys.argv[1] == "keep":
    assert runtime.keep_freed_memory(2 * size)
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
faults = []
for _ in range(10):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(sum(faults[1:]))
"""


def faults(mode: str) -> int:
    result = subprocess.run(
        [sys.executable, "-c", FAULTS, mode],
        capture_output=True, text=True, env=command_environment(), timeout=60, check=True,
    )
    return int(result.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_freed_block_is_reused_without_page_faults():
    pages = 48 * 2**20 // 4096
    # Without it glibc maps each block afresh (it is over its 32 MB sliding threshold).
    assert faults("default") >= 9 * pages * 0.9
    assert faults("keep") < pages // 10


def test_bad_sizes_are_refused():
    for value in (0, -1):
        with pytest.raises(ValueError, match="largest"):
            runtime.keep_freed_memory(value)
    for value in (1.5, "1", True):
        with pytest.raises(TypeError, match="largest"):
            runtime.keep_freed_memory(value)


def test_transit_processes_keep_twice_a_step_and_at_least_the_sliding_threshold(monkeypatch):
    from tachyflow.insitu.transit import sst

    kept = []
    monkeypatch.setattr(runtime, "keep_freed_memory", lambda largest: kept.append(largest))
    sst.keep_step_buffers(48 * 2**20)  # three fields of 128^3 doubles
    sst.keep_step_buffers(2**20)
    assert kept == [96 * 2**20, sst.HEAP_SERVED_BYTES]

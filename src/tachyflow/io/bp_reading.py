"""Reading ADIOS2 BP files without leaving the reader's profile behind.

ADIOS2's BP5 reader (2.10 and later) writes ``/tmp/<file name>_<process id in hex>_profiling
.json`` whenever it closes, with no engine parameter that turns it off (``Profile = Off``
does not). Every restart, series trim, acoustic post-processing and field check that reads
a BP file back would leave one in the machine's ``/tmp``: :func:`bp_reader` and
:func:`bp_stream` open the file for reading and remove that profile once they have closed
it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def reader_profile(path: str | os.PathLike) -> Path:
    """Where ADIOS2's BP5 reader leaves its profile of ``path`` read by this process (always
    under ``/tmp``, whatever ``$TMPDIR`` says)."""
    return Path("/tmp") / f"{Path(path).name}_{os.getpid():x}_profiling.json"


@contextlib.contextmanager
def _removing_profile(path, opened):
    try:
        with opened as reader:
            yield reader
    finally:
        reader_profile(path).unlink(missing_ok=True)


def bp_reader(path: str | os.PathLike):
    """``adios2.FileReader(path)`` as a context manager that leaves no profile in /tmp."""
    import adios2

    return _removing_profile(path, adios2.FileReader(str(path)))


def bp_stream(path: str | os.PathLike):
    """``adios2.Stream(path, "r")`` (step by step) as a context manager that leaves no
    profile in /tmp."""
    import adios2

    return _removing_profile(path, adios2.Stream(str(path), "r"))

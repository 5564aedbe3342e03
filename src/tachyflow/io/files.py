"""Writing files so that a reader never sees a half-written one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def replacing(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; on success rename it to ``path``.

    A reader never sees a half-written file and an earlier file is only replaced by a
    complete one; on error the temporary file is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix
    )
    os.close(handle)
    try:
        yield Path(temporary)
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)

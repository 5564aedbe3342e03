"""Advisory locks on files, released by the system however the holding process ends."""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

from tachyflow.errors import ConfigError


class FolderInUseError(ConfigError):
    """Another live process holds the lock of a run folder."""


def hold_exclusive(path) -> object | None:
    """Open ``path`` (created if missing) and hold an exclusive lock on it; the open file
    (keep it open for as long as the lock must hold), None if another process holds it.
    On a file system without locks the file is returned unlocked (nothing can be told)."""
    file = open(path, "a+")
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        return None
    except OSError:
        return file
    return file


class RunFolderLock:
    """The lock that makes a folder hold at most one live run (or one live ``user``).

    Taken before anything in the folder is written and held until :meth:`release` (or the
    process's end: the system drops it however the process ends, so a killed run never
    leaves a stale lock). The lock file records the holder's host and pid.

    Parameters
    ----------
    folder : path
        The folder (created).
    name : str
        The lock file's name: writers that may share the folder use different names.
    user : str
        What holds it, for the message.

    Raises
    ------
    FolderInUseError
        Another live process holds the folder.
    """

    NAME = ".tachyflow-run.lock"

    def __init__(self, folder, name: str = NAME, user: str = "run"):
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        self._file = hold_exclusive(path)
        if self._file is None:
            holder = path.read_text().strip() or "another process"
            raise FolderInUseError(
                f"{folder} is in use by a live {user} ({holder}): wait for it to end, or "
                "give another output folder"
            )
        self._file.seek(0)
        self._file.truncate()
        self._file.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        self._file.flush()

    def release(self) -> None:
        """Let another run use the folder."""
        if self._file is not None:
            self._file.close()
            self._file = None

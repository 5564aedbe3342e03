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
    complete one; on error the temporary file is removed. An OSError with an errno (a
    full disk) is raised again naming ``path``: writers such as matplotlib's name no file.
    """
    path = Path(path)
    with naming(path):
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


@contextlib.contextmanager
def naming(path: str | os.PathLike):
    """Raise an OSError with an errno from within the block again as ``[Errno N] cannot
    write PATH: ...``, so that the one line a failed run ends with says which file."""
    try:
        yield
    except OSError as error:
        if error.errno is None or str(path) in str(error):
            raise
        raise OSError(error.errno, f"cannot write {path}: {error.strerror}") from error


def adios2_failure(error: Exception, path) -> Exception:
    """An ADIOS2 writer's exception (a RuntimeError whose text, coloured and on several
    lines, ends "... errno = 28: No space left on device") as ``[Errno N] cannot write
    PATH: ...``; ``error`` itself when it names no errno."""
    import re

    found = re.search(r"errno = (\d+)", str(error))
    if found is None:
        return error
    code = int(found.group(1))
    return OSError(code, f"cannot write {path}: {os.strerror(code)}")


class AppendedTable:
    """A CSV file that grows a row at a time (never rewritten, flushed per row, so the cost
    of a row does not grow with the run); after a restart at ``first_step`` the rows up to
    it are kept and the run appends after them. ``last_step``: the step of the last row;
    ``step_column``: the column that holds the step.
    """

    def __init__(self, path, columns, restarted: bool = False, first_step: int = 0,
                 step_column: str = "step"):
        import csv

        path = Path(path)
        kept = []
        if restarted and path.is_file():
            with path.open(newline="") as existing:
                kept = [
                    row for row in csv.DictReader(existing) if int(row[step_column]) <= first_step
                ]
        self._file = path.open("w", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=list(columns), extrasaction="ignore")
        self._writer.writeheader()
        self._writer.writerows(kept)
        self._file.flush()
        self.path = path
        self.step_column = step_column
        self.last_step = int(kept[-1][step_column]) if kept else None

    def append(self, row: dict) -> None:
        """Write one row (a dict with the step column and the others) and flush it."""
        with naming(self.path):
            self._writer.writerow(row)
            self._file.flush()
        self.last_step = int(row[self.step_column])

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    @staticmethod
    def closed(table: AppendedTable | None) -> None:
        """Close ``table`` if there is one; None (for ``self._table = closed(...)``)."""
        if table is not None:
            table.close()


def data_table(config, key: str, folder: str, name: str, columns, examples: str) -> dict:
    """The columns of a CSV table a case names by ``key`` (``"section.option"``): a built-in
    data set ``tachyflow/data/FOLDER/NAME.csv`` or a file (relative to the case's folder),
    ``#`` lines left out. ConfigError for a missing file or one that lacks ``columns``;
    ``examples`` names the built-in sets in the message."""
    from importlib import resources

    import numpy as np

    from tachyflow.errors import ConfigError

    built_in = resources.files("tachyflow") / "data" / folder / f"{name}.csv"
    source = Path(config.source)
    path = Path(name) if Path(name).is_absolute() else (
        source.parent if source.is_file() else Path.cwd()) / name
    path = built_in if built_in.is_file() else path
    if not path.is_file():
        raise ConfigError(f"{config.source}: {key!r} must be a built-in data set ({examples}) "
                          f"or a CSV file, got {name!r}")
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    data = np.genfromtxt(lines, delimiter=",", names=True)
    found = data.dtype.names or ()
    missing = [column for column in columns if column not in found]
    if missing:
        raise ConfigError(f"{config.source}: {key} {name!r} lacks the columns {missing} (has "
                          f"{found})")
    return {column: np.asarray(data[column]) for column in found}

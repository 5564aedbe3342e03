"""Checkpoints of a flow run: the global fields and the clock, in one ``.npz`` file.

The fields are written whole (gathered on rank 0), so a run can restart on any number of
ranks and continue bit for bit. Files are written under a temporary name and renamed, so
a crash never leaves a corrupt checkpoint; older ones beyond ``keep`` are removed only
after the new one is complete.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.files import replacing

FORMAT = "tachyflow-checkpoint-1"
FIELDS = ("u", "v", "w", "p")


def write_checkpoint(
    folder,
    step: int,
    time: float,
    fields: dict[str, np.ndarray],
    extra: dict[str, float] | None = None,
    keep: int = 2,
) -> Path:
    """Write ``step_XXXXXXXX.npz`` atomically into ``folder`` and prune old checkpoints."""
    folder = Path(folder)
    path = folder / f"step_{step:08d}.npz"
    with replacing(path) as temporary, open(temporary, "wb") as stream:
        np.savez(
            stream,
            format=np.array(FORMAT),
            step=np.array(step),
            time=np.array(time),
            **{f"extra_{k}": np.array(v) for k, v in (extra or {}).items()},
            **fields,
        )
    for old in sorted(folder.glob("step_*.npz"))[:-keep]:
        old.unlink()
    return path


def latest_checkpoint(folder) -> Path | None:
    """The newest checkpoint in ``folder``, if any."""
    found = sorted(Path(folder).glob("step_*.npz"))
    return found[-1] if found else None


def newest_readable_checkpoint(folder, shape, warn=print) -> Path:
    """The newest checkpoint in ``folder`` that reads whole for a grid of ``shape``.

    Newer ones that do not (torn, corrupt, another grid) are skipped with a ``warn`` line
    naming them; temporary files left by a writer that was killed are removed (call this
    only while holding the run folder's lock). ConfigError when none is usable.
    """
    folder = Path(folder)
    for leftover in folder.glob(".step_*.npz"):
        leftover.unlink(missing_ok=True)
    found = sorted(folder.glob("step_*.npz"), reverse=True)
    for path in found:
        try:
            read_checkpoint(path, shape)
        except ConfigError as error:
            warn(f"skipping checkpoint {path.name}: {error}")
            continue
        if path != found[0]:
            warn(f"restarting from {path.name}, the newest checkpoint that reads whole")
        return path
    raise ConfigError(
        f"--restart latest: no usable checkpoint in {folder}"
        + (f" ({len(found)} found, none readable)" if found else "")
    )


def read_checkpoint(path, shape) -> dict:
    """Load a checkpoint and check it fits a grid of ``shape``; ConfigError otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"checkpoint {str(path)!r} does not exist")
    try:
        with np.load(path) as data:
            if str(data["format"]) != FORMAT:
                raise ConfigError(f"{path} is a {data['format']} file, not {FORMAT}")
            content = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as error:
        raise ConfigError(
            f"checkpoint {path} is corrupt or not a tachyflow checkpoint: {error}"
        ) from None
    for name in FIELDS:
        if name not in content or content[name].shape != tuple(shape):
            found = content[name].shape if name in content else "missing"
            raise ConfigError(
                f"checkpoint {path}: field {name!r} is {found}, the case's grid is {tuple(shape)}"
            )
    return content

"""Surface data of FW-H as an ADIOS2 BP5 series: written during a run, read after it.

One step per sampled source time. Constant arrays (``areas``) are written in every step so
any step stands alone (they are small). Per step: ``time``, ``positions``, ``normals``,
``surface_velocity`` (np, 3), and either the flow values — ``pressure`` (np), and for a
permeable surface ``density`` (np) and ``velocity`` (np, 3) — or the FW-H source terms
``normal_flux`` (np) and ``load`` (np, 3) that a run computes where the flow lives
(:mod:`tachyflow.parallel.noise_exchange`). :func:`read_surface_series` returns the arrays
stacked over the steps, the same dictionary :func:`tachyflow.acoustics.offline` builds from
an ``.npz``. Rank 0 writes (the ``adios2`` wheel has no MPI); BP5 commits each finished
step, so a crash loses at most the step being written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.bp_reading import bp_reader
from tachyflow.io.fields import trim_series
from tachyflow.io.files import adios2_failure

GEOMETRY = ("positions", "normals", "surface_velocity")
FLOW_VALUES = ("pressure", "density", "velocity")
SOURCE_TERMS = ("normal_flux", "load")


class SurfaceSeriesWriter:
    """Appends steps of surface data to a BP5 series (one process writes).

    Parameters
    ----------
    path : path
        The ``.bp`` folder (created or replaced; appended to with ``keep_until``).
    areas : array_like
        Panel areas, shape ``(np,)``.
    keep_until : float, optional
        Continue an existing series (a restarted run), keeping its steps up to this time.
    """

    def __init__(self, path, areas, keep_until: float | None = None):
        import adios2

        self.path = Path(path)
        self.areas = np.ascontiguousarray(areas, dtype=np.float64)
        append = keep_until is not None and self.path.exists()
        if append:
            trim_series(self.path, keep_until, "time")
        mode = "a" if append else "w"
        self._stream = adios2.Stream(str(self.path), mode)

    def write(self, time: float, arrays: dict[str, np.ndarray]) -> None:
        """Append one step: ``arrays`` holds the geometry and flow values or source terms."""
        known = set(GEOMETRY) | set(FLOW_VALUES) | set(SOURCE_TERMS)
        unknown = set(arrays) - known
        if unknown:
            raise ValueError(f"unknown surface arrays {sorted(unknown)} (known: {sorted(known)})")
        stream = self._stream
        try:
            stream.begin_step()
            stream.write("time", float(time))
            stream.write("areas", self.areas)
            for name, values in arrays.items():
                stream.write(name, np.ascontiguousarray(values, dtype=np.float64))
            stream.end_step()
        except RuntimeError as error:  # ADIOS2's, a full disk among them
            raise adios2_failure(error, self.path) from None

    def close(self) -> None:
        """Finish the series."""
        self._stream.close()


def read_surface_series(path, permeable: bool) -> dict[str, np.ndarray]:
    """The steps of a surface series, stacked: ``times`` (nt), ``areas`` (np), and per step
    the geometry and either the flow values or the source terms (ConfigError naming what is
    missing or unreadable)."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"surface series {str(path)!r} is not a BP5 folder")
    try:
        with bp_reader(path) as reader:
            steps = reader.num_steps()
            available = set(reader.available_variables())
            if steps < 1 or "time" not in available:
                raise ConfigError(f"{path}: no steps with a 'time' variable")
            every = [0, steps]
            data = {"times": np.asarray(reader.read("time", step_selection=every)).ravel()}
            data["areas"] = np.asarray(reader.read("areas", step_selection=[0, 1])).ravel()
            names = [*GEOMETRY, *(SOURCE_TERMS if "load" in available else FLOW_VALUES)]
            if not permeable and "load" not in available:
                names = [name for name in names if name not in ("density", "velocity")]
            missing = [name for name in names if name not in available]
            if missing:
                raise ConfigError(f"{path}: missing variable(s) {missing}")
            npanel = data["areas"].size
            for name in names:
                values = np.asarray(reader.read(name, step_selection=every))
                width = values.size // (steps * npanel)
                shape = (steps, npanel, 3) if width == 3 else (steps, npanel)
                data[name] = values.reshape(shape)
    except (RuntimeError, ValueError) as error:
        raise ConfigError(f"cannot read surface series {str(path)!r}: {error}") from None
    return data

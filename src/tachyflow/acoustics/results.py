"""What an FW-H prediction hands back, in the run or after it (MPI-free): its observers
on an arc (:func:`arc_observers`, for a directivity plot) and its signals written
(:func:`write_results`: ``signals.csv``, the spectra and the arc's directivity).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.acoustics.fwh import FWHSignals
from tachyflow.acoustics.spectra import directivity_plot, write_spectra
from tachyflow.io.files import replacing

PLANES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}


def arc_observers(radius, plane, start, stop, count, centre=(0.0, 0.0, 0.0)):
    """Angles (degrees) and positions ``(count, 3)`` of observers on a circular arc in
    ``plane`` (xy, xz or yz) around ``centre``, from ``start`` to ``stop`` degrees."""
    angles = np.linspace(start, stop, count)
    first, second = PLANES[plane]
    points = np.tile(np.asarray(centre, dtype=np.float64), (count, 1))
    points[:, first] += radius * np.cos(np.radians(angles))
    points[:, second] += radius * np.sin(np.radians(angles))
    return angles, points


def write_results(folder, names, signals: FWHSignals, arc_angles) -> np.ndarray:
    """``signals.csv`` (total, thickness and loading per observer), the spectra and, for an
    arc (the last observers), the directivity plot; returns the OASPL per observer."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    columns, header = [signals.times], ["time_s"]
    for index, name in enumerate(names):
        columns += [signals.pressure[index], signals.thickness[index], signals.loading[index]]
        header += [f"{name}_p", f"{name}_thickness", f"{name}_loading"]
    with replacing(folder / "signals.csv") as temporary:
        np.savetxt(temporary, np.column_stack(columns), delimiter=",", header=",".join(header))
    rate = 1.0 / (signals.times[1] - signals.times[0])
    oaspl = write_spectra(folder, names, signals.pressure, rate)
    if len(arc_angles):
        directivity_plot(folder / "directivity.png", arc_angles, oaspl[-len(arc_angles) :])
    return oaspl

"""The manifest of a run's transit streams: what a reader needs before it attaches.

Rank 0 of the writer replaces ``RUN_DIR/transit/manifest.json`` atomically once every
stream is open. Static metadata (grid, lengths, ``faces_y``, names, dtype) lives here
rather than in ADIOS attributes: SST sends an attribute only with the step in which it was
defined, so a reader that attaches later would never see it (measured).
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import time as clock

from tachyflow.insitu.transit.streams import stream_name, transit_folder
from tachyflow.io.files import replacing

MANIFEST = "manifest.json"
FORMAT = "tachyflow-transit"


def write_manifest(
    run_dir,
    *,
    writer_id: str,
    bounds,
    fields,
    dtype,
    global_shape,
    orientation: str,
    queue: tuple[int, str, int],
    grid=None,
) -> None:
    """Write the manifest of a writer (one process).

    ``bounds`` are the first ranks of the aggregator groups followed by the rank count;
    ``queue`` is ``(queue_limit, queue_full_policy, reserve_queue_limit)``. Raises OSError
    naming the file when it cannot be written.
    """
    folder = transit_folder(run_dir)
    aggregators = len(bounds) - 1
    queue_limit, policy, reserve = queue
    manifest = {
        "format": FORMAT,
        "version": 1,
        "writer_id": writer_id,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "created": clock.time(),
        "ranks": int(bounds[-1]),
        "aggregators": aggregators,
        "groups": [[int(a), int(b)] for a, b in itertools.pairwise(bounds)],
        "streams": [stream_name(g) for g in range(aggregators)],
        "fields": list(fields),
        "dtype": dtype.str,
        "global_shape": list(global_shape),
        "orientation": orientation,
        "queue_limit": queue_limit,
        "queue_full_policy": policy,
        "reserve_queue_limit": reserve,
        "grid": None
        if grid is None
        else {
            "lengths": [float(length) for length in grid.lengths],
            "faces_y": [float(face) for face in grid.faces_y],
            "stretching": float(grid.stretching),
        },
    }
    try:
        with replacing(folder / MANIFEST) as temporary:
            temporary.write_text(json.dumps(manifest, indent=1))
    except OSError as error:
        raise OSError(f"cannot write {folder / MANIFEST}: {error}") from error


def read_manifest(run_dir) -> dict | None:
    """The manifest of ``run_dir``'s transit streams, or None when there is none (yet)."""
    try:
        manifest = json.loads((transit_folder(run_dir) / MANIFEST).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return manifest if manifest.get("format") == FORMAT else None

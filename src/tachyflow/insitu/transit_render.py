"""``tachyflow transit-render RUN_DIR``: a run's ``transit`` pipelines in other processes.

A reader attaches to the run's transit streams (:class:`~tachyflow.insitu.transit.TransitReader`)
— before the run starts, while it runs, or again after an earlier reader left — and for
every step it receives draws the pipelines that the run marked due at that step, with the
same extract and draw code as in situ (the cells a pipeline reads, padded periodically,
stand for a piece with its ghost layer: the whole grid, a slice's layers, the probes'
stencils). With
``-n M`` there are M readers; reader ``r`` draws the pipelines whose position in the case
file is ``r`` modulo M, so they share the rendering. Pictures go to
``RUN_DIR/transit-images/`` (or ``--output``); each reader writes a summary
(``transit-render-<r>.json``: steps, skipped steps, time spent, peak memory) when it
stops: at the end of the run, when the run dies, on Ctrl-C or SIGTERM (it then detaches
and the run goes on).
"""

from __future__ import annotations

import csv
import json
import resource
import signal
import time as clock
from pathlib import Path

from tachyflow.insitu.pipelines import Pipeline, padded
from tachyflow.io.files import replacing
from tachyflow.io.locks import RunFolderLock
from tachyflow.numerics.grid import StaggeredGrid


class _Stop(Exception):
    """SIGTERM: leave the loop like Ctrl-C does."""


def _grid(case) -> StaggeredGrid:
    return StaggeredGrid.from_section(case.grid)


def _peak_memory() -> int:
    """Peak resident size of this process in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _history(run_dir: Path) -> list[dict]:
    """The run's statistics so far (``stats.csv``), for ``statistics`` pipelines."""
    path = run_dir / "stats.csv"
    if not path.is_file():
        return []
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    return [{key: float(value) for key, value in row.items()} for row in rows]


def render_in_transit(
    run_dir,
    load_case,
    rank: int = 0,
    size: int = 1,
    timeout: float | None = None,
    delay: float = 0.0,
    output=None,
    draw: bool = True,
) -> dict:
    """Attach to ``run_dir``'s streams and draw until the run ends (see the module notes).

    Parameters
    ----------
    run_dir : path
        The run's output folder.
    load_case : callable
        Reads the run's ``config.toml`` once the run has written it (``path -> Config``:
        :func:`tachyflow.config.load`).
    rank, size : int
        This reader's index among ``size`` readers.
    timeout : float, optional
        Seconds to wait for the run to appear and for each step (None: no limit).
    delay : float
        Extra seconds per step, to stand for a slow reader in benchmarks and tests.
    output : path, optional
        Folder of the pictures (default ``RUN_DIR/transit-images``).
    draw : bool
        False: take the steps and draw nothing (what streaming alone costs the run).

    Returns
    -------
    dict
        The summary also written to ``transit-render-<rank>.json``.
    """
    from tachyflow.insitu.render import SceneRenderer
    from tachyflow.insitu.transit import TransitReader

    run_dir = Path(run_dir)
    folder = Path(output) if output is not None else run_dir / "transit-images"
    summary = {"reader": rank, "readers": size, "steps": 0, "drawn": 0, "skipped": 0,
               "seconds": {"wait": 0.0, "render": 0.0, "delay": 0.0}, "end": None}

    def stop(signum, frame):
        raise _Stop

    # One reader of each index per picture folder: two would draw into the same files.
    lock = RunFolderLock(folder, f".tachyflow-transit-reader-{rank}.lock",
                         f"transit-render reader {rank}")
    previous = signal.signal(signal.SIGTERM, stop)
    reader = None
    renderer = None
    try:
        reader = TransitReader(run_dir, timeout=timeout)
        case = load_case(str(run_dir / "config.toml"))
        grid = _grid(case)
        entries = [entry for entry in case.insitu.pipeline if entry.mode == "transit"]
        pipelines = {
            entry.name: Pipeline(entry, grid)
            for index, entry in enumerate(entries)
            if index % size == rank
        }
        renderer = SceneRenderer((case.insitu.width, case.insitu.height))
        # Memory before the first step: what the data of the steps add comes on top.
        summary["baseline_memory"] = _peak_memory()
        started = clock.perf_counter()
        while (item := reader.read()) is not None:
            step, time, fields = item
            now = clock.perf_counter()
            summary["seconds"]["wait"] += now - started
            summary["steps"] += 1
            ghosted = {}
            for name in reader.pipelines if draw else ():
                pipeline = pipelines.get(name)
                if pipeline is None:
                    continue
                # The cells the pipeline reads, out of those the step carries.
                cells = pipeline.cells
                for field in pipeline.fields:
                    if (field, cells) not in ghosted:
                        inside = cells.within(reader.boxes[field])
                        ghosted[field, cells] = padded(fields[field][inside])
                piece = pipeline.extract(
                    {field: ghosted[field, cells] for field in pipeline.fields}, cells.start
                )
                history = _history(run_dir) if pipeline.draws_history else []
                pipeline.draw(renderer, piece, folder, step, time, history)
                summary["drawn"] += 1
            started = clock.perf_counter()
            summary["seconds"]["render"] += started - now
            if delay:
                clock.sleep(delay)
                summary["seconds"]["delay"] += delay
                started = clock.perf_counter()
        summary["end"] = reader.end_status
    except (KeyboardInterrupt, _Stop):
        summary["end"] = "interrupted"
    finally:
        signal.signal(signal.SIGTERM, previous)
        if reader is not None:
            summary["skipped"] = reader.skipped
            reader.close()
        if renderer is not None:
            renderer.close()
        lock.release()
    summary["peak_memory"] = _peak_memory()
    with replacing(run_dir / f"transit-render-{rank}.json") as temporary:
        temporary.write_text(json.dumps(summary, indent=2) + "\n")
    return summary

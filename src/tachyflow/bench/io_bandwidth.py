"""``tachyflow bench io``: checkpoint and field output bandwidth against ``dd`` on the same
file system, in the same run.

Every candidate moves the same bytes, the four global fields u, v, w, p of the grid in
float64, and ends with the data on disk (``os.sync``, as ``dd conv=fsync``):

- writes: the MPI-IO checkpoint (each rank its piece, :mod:`tachyflow.io.checkpoint`),
  the BP5 field step (slabs streamed to rank 0, :mod:`tachyflow.io.fields`), the VTK
  pieces (each rank its own zlib-compressed ``.vtr``) and the method tachyflow used before,
  whole fields gathered on rank 0 and saved as one ``.npz``; the peer is ``dd`` writing a
  file of the same size with 8 MiB blocks;
- reads: the MPI-IO restart (each rank its piece, checksums verified) and the old restart
  (every rank loads the whole ``.npz`` and keeps its piece); the peer is ``dd`` reading the
  checkpoint file. Reads come from the page cache unless the file system's cache was
  dropped: compare them with each other, not with a disk's speed.

Each candidate's file is checked once against the fields before timing, every rank its
own piece (no rank holds a whole field).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from tachyflow import runtime
from tachyflow.bench.harness import Candidate, measure
from tachyflow.bench.plots import file_stem, grid_title, plot_samples
from tachyflow.bench.results import grid_params, new_results
from tachyflow.io.bp_reading import bp_reader
from tachyflow.io.checkpoint import PieceLayout, checkpoint_path, read_checkpoint
from tachyflow.io.checkpoint import write_checkpoint as write_mpiio
from tachyflow.io.fields import FieldWriter
from tachyflow.io.vtk_files import VTKFieldWriter
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import PencilDecomposition

NAMES = ("u", "v", "w", "p")


def _piece_field(name: str, layout: PieceLayout) -> np.ndarray:
    """This rank's piece of a deterministic field of the global indices (for the checks;
    no rank builds a whole field)."""
    x, y, z = np.meshgrid(
        *(np.arange(s, s + n, dtype=np.float64) for s, n in zip(layout.start, layout.shape,
                                                                  strict=True)),
        indexing="ij",
    )
    return np.sin(0.1 * x + NAMES.index(name)) + 0.01 * y * z


def _dd(arguments: list[str]) -> None:
    """Run ``dd`` quietly; CalledProcessError if it fails."""
    subprocess.run(["dd", *arguments, "status=none"], check=True, capture_output=True)


def run_io_benchmark(
    global_shape, proc_grid=None, repeats=5, warmup=1, scratch=None, comm=None, peer=True
) -> dict:
    """Time checkpoint and field writes and reads (collective over ``comm``).

    Parameters
    ----------
    scratch : path, optional
        Folder on the file system to measure (created, emptied afterwards); default a
        temporary folder under the current directory.
    """
    comm = runtime.world() if comm is None else comm
    root = comm.Get_rank() == 0
    decomposition = PencilDecomposition(global_shape, proc_grid, comm, (True, True, True))
    pencil = decomposition.pencils["y"]
    layout = PieceLayout(decomposition.global_shape, pencil.start, pencil.shape)
    pieces = {name: _piece_field(name, layout) for name in NAMES}
    nbytes = len(NAMES) * int(np.prod(decomposition.global_shape)) * 8
    base = Path(scratch) if scratch else Path.cwd() / ".tachyflow-io-scratch"
    folder = comm.bcast(str(base / f"io-{os.getpid()}") if root else None, root=0)
    folder = Path(folder)
    if root:
        folder.mkdir(parents=True, exist_ok=True)
    comm.Barrier()
    grid = StaggeredGrid(decomposition.global_shape, (1.0, 1.0, 1.0), periodic_y=True)

    def synced(function):
        def run():
            function()
            comm.Barrier()
            if root:
                os.sync()
            comm.Barrier()

        return run

    def mpiio_write():
        write_mpiio(comm, folder / "ckpt", 1, 0.0, pieces, layout, keep=1)

    def bp5_write():
        writer = FieldWriter(comm, folder / "fields.bp", grid, layout)
        writer.write(1, 0.0, pieces)
        writer.close()

    vtk_writer = VTKFieldWriter(comm, folder, grid, layout)

    def vtk_write():
        vtk_writer.write(1, 0.0, pieces)

    def gather_write():
        gathered = {n: decomposition.gather_global(pieces[n], "y") for n in NAMES}
        if root:
            with open(folder / "gathered.npz", "wb") as stream:
                np.savez(stream, **gathered)

    def dd_write():
        if root:
            _dd(["if=/dev/zero", f"of={folder / 'dd.bin'}", "bs=8M",
                 f"count={-(-nbytes // 2**23)}", "conv=fsync"])

    checkpoint = checkpoint_path(folder / "ckpt", 1)

    def mpiio_read():
        return read_checkpoint(comm, checkpoint, layout)[1]

    def gather_read():
        with np.load(folder / "gathered.npz") as data:
            return {n: np.ascontiguousarray(data[n][pencil.slices]) for n in NAMES}

    def dd_read():
        if root:
            _dd([f"if={checkpoint}", "of=/dev/null", "bs=8M"])

    # One untimed round of every writer, then the checks of what they wrote.
    for function in (mpiio_write, bp5_write, vtk_write, gather_write):
        function()
    comm.Barrier()
    checks = {
        "mpiio": all(np.array_equal(mpiio_read()[n], pieces[n]) for n in NAMES),
        "npz": all(np.array_equal(gather_read()[n], pieces[n]) for n in NAMES),
        "bp5": _check_bp5(folder / "fields.bp", pieces, layout),
        "vtk": _check_vtk(folder / "fields_vtk" / "step_00000001", pieces, layout, comm),
    }
    params = grid_params(
        decomposition,
        repeats,
        warmup,
        bytes=nbytes,
        file_system=str(base),
    )
    document = new_results("io", params, comm)
    writes = [
        Candidate("mpiio-checkpoint-write", synced(mpiio_write), checks["mpiio"]),
        Candidate("bp5-fields-write", synced(bp5_write), checks["bp5"]),
        Candidate("vtk-pieces-write", synced(vtk_write), checks["vtk"]),
        Candidate("gather-npz-write", synced(gather_write), checks["npz"]),
    ]
    if peer and shutil.which("dd"):
        writes.append(Candidate("dd-write", synced(dd_write), True, peer=True))
    measure(document, writes, comm, repeats, warmup, "io writes", bytes_moved=nbytes)
    reads = new_results("io", params, comm)
    read_candidates = [
        Candidate("mpiio-checkpoint-read", mpiio_read, checks["mpiio"]),
        Candidate("whole-npz-read", gather_read, checks["npz"]),
    ]
    if peer and shutil.which("dd"):
        read_candidates.append(Candidate("dd-read", dd_read, True, peer=True))
    measure(reads, read_candidates, comm, repeats, warmup, "io reads", bytes_moved=nbytes)
    document["results"] += reads["results"]
    document["peers"] += reads["peers"]
    if not (peer and shutil.which("dd")):
        document["peers_missing"] = {"dd": "not found on PATH" if peer else "not requested"}
    comm.Barrier()
    if root:
        shutil.rmtree(folder, ignore_errors=True)
        if not scratch:
            shutil.rmtree(base, ignore_errors=True)
    decomposition.free()
    return document


def _check_bp5(path: Path, pieces: dict, layout: PieceLayout) -> bool:
    """This rank's block of every field in the BP5 step equals its piece."""
    if not layout.size:
        return True
    start, count = list(reversed(layout.start)), list(reversed(layout.shape))
    with bp_reader(path) as reader:
        return all(
            np.array_equal(reader.read(n, start, count).transpose(2, 1, 0), pieces[n])
            for n in NAMES
        )


def _check_vtk(folder: Path, pieces: dict, layout: PieceLayout, comm) -> bool:
    """This rank's ``.vtr`` piece holds its piece of every field."""
    from tachyflow.io.vtk_files import read_cell_data

    if not layout.size:
        return True
    cells = read_cell_data(folder / f"piece_{comm.Get_rank():05d}.vtr")
    shape = layout.shape[::-1]
    return all(
        np.array_equal(cells[n].reshape(shape).transpose(2, 1, 0), pieces[n]) for n in NAMES
    )


def stem(document: dict) -> str:
    """File name stem: ``io_128x128x128_2x1``."""
    return file_stem(document)


def plot(document: dict, path):
    """Box plot of the write and read times."""
    title = grid_title(document, "Checkpoint and field I/O (4 fields, synced)")
    return plot_samples(document, path, title, "time [ms]")

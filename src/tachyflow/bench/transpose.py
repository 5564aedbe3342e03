"""``tachyflow bench transpose``: pencil round trips, ours against mpi4py-fft's.

One sample is a forward and backward round trip x→y→z→y→x of a global array. Every
candidate is first checked: the intermediate pencils must hold exactly the right global
cells and the round trip must return the input bit for bit; a candidate that fails is
reported as failed and never timed. The peer is mpi4py-fft's ``Pencil.transfer`` objects
(``MPI_Alltoallw`` with subarray datatypes) on the same process grid, timed in the same
run and interleaved with ours.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow import runtime
from tachyflow.bench.harness import PEER_INSTALL_HINT, Candidate, measure
from tachyflow.bench.plots import file_stem, grid_title, plot_samples
from tachyflow.bench.results import grid_params, new_results
from tachyflow.parallel import PencilDecomposition, Transposer
from tachyflow.parallel.transpose import METHODS

PEER_NAME = "mpi4py-fft"


def index_field(shape, start, stop, global_shape, dtype) -> np.ndarray:
    """Local block of the global field ``f[i, j, k] = (i * ny + j) * nz + k`` (exact)."""
    i, j, k = (np.arange(a, b, dtype=np.float64) for a, b in zip(start, stop, strict=True))
    _, ny, nz = global_shape
    values = (i[:, None, None] * ny + j[None, :, None]) * nz + k[None, None, :]
    if np.dtype(dtype).kind == "c":
        values = values - 1j * values
    return np.ascontiguousarray(values.reshape(shape), dtype=dtype)


def _round_trip(steps, expected):
    """A verified round trip x→y→z→y→x.

    ``steps`` are the four moves ``(x→y, y→z, z→y, y→x)``, each ``move(source, out)``;
    ``expected`` maps each orientation to this rank's exact piece of the index field.
    Returns ``(run, verified)``.
    """
    x_to_y, y_to_z, z_to_y, y_to_x = steps
    x_in = expected["x"]
    y_mid, z_mid = np.zeros_like(expected["y"]), np.zeros_like(expected["z"])
    y_back, x_out = np.zeros_like(expected["y"]), np.zeros_like(x_in)

    def run():
        x_to_y(x_in, y_mid)
        y_to_z(y_mid, z_mid)
        z_to_y(z_mid, y_back)
        y_to_x(y_back, x_out)

    run()
    verified = (
        np.array_equal(y_mid, expected["y"])
        and np.array_equal(z_mid, expected["z"])
        and np.array_equal(x_out, x_in)
    )
    return run, verified


def _our_candidate(decomposition, dtype, method):
    """Round trip with our Transposer; returns (run, verified)."""
    transposer = Transposer(decomposition, dtype, method)
    expected = {
        o: index_field(p.shape, p.start, p.stop, decomposition.global_shape, dtype)
        for o, p in decomposition.pencils.items()
    }
    steps = (transposer.x_to_y, transposer.y_to_z, transposer.z_to_y, transposer.y_to_x)
    return _round_trip(steps, expected)


def _peer_candidate(comm, global_shape, proc_grid, dtype):
    """Round trip with mpi4py-fft's transfers; returns (run, verified, cleanup, version)."""
    import mpi4py_fft
    from mpi4py_fft.pencil import Pencil, Subcomm

    p_row, p_col = proc_grid
    # Same layout as ours: the x-pencil splits y over p_row ranks and z over p_col.
    subcomms = Subcomm(comm, [1, p_row, p_col])
    pencil_x = Pencil(subcomms, list(global_shape), axis=0)
    pencil_y = pencil_x.pencil(1)
    pencil_z = pencil_y.pencil(2)
    transfer_xy = pencil_x.transfer(pencil_y, dtype)
    transfer_yz = pencil_y.transfer(pencil_z, dtype)
    expected = {}
    for orientation, pencil in zip("xyz", (pencil_x, pencil_y, pencil_z), strict=True):
        stop = [s + n for s, n in zip(pencil.substart, pencil.subshape, strict=True)]
        expected[orientation] = index_field(
            pencil.subshape, pencil.substart, stop, global_shape, dtype
        )
    steps = (transfer_xy.forward, transfer_yz.forward, transfer_yz.backward, transfer_xy.backward)
    run, verified = _round_trip(steps, expected)

    def cleanup():
        transfer_xy.destroy()
        transfer_yz.destroy()
        subcomms.destroy()

    return run, verified, cleanup, mpi4py_fft.__version__


def peer_available() -> bool:
    """True when mpi4py-fft can be imported (the ``bench`` extra is installed)."""
    try:
        import mpi4py_fft.pencil  # noqa: F401
    except ImportError:
        return False
    return True


def run_transpose_benchmark(
    global_shape,
    proc_grid=None,
    dtype="float64",
    methods=METHODS,
    repeats=20,
    warmup=3,
    peer=True,
    comm=None,
) -> dict:
    """Measure round trips; return the results document (collective over ``comm``).

    ``peer=True`` adds mpi4py-fft when it is installed (the document says when it was not).
    """
    comm = runtime.world() if comm is None else comm
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        raise ValueError(f"dtype must be a real or complex floating type, got {dtype}")
    for method in methods:
        if method not in METHODS:
            raise ValueError(f"transpose method must be one of {METHODS}, got {method!r}")
    decomposition = PencilDecomposition(global_shape, proc_grid, comm)
    global_bytes = int(np.prod(decomposition.global_shape)) * dtype.itemsize
    params = grid_params(
        decomposition,
        repeats,
        warmup,
        dtype=dtype.name,
        operation="round trip x->y->z->y->x (4 transposes)",
        bytes_per_round_trip=4 * global_bytes,
        local_shapes={o: list(decomposition.local_shape(o)) for o in "xyz"},
    )
    document = new_results("transpose", params, comm)
    candidates, cleanups = [], []
    for method in methods:
        run, ok = _our_candidate(decomposition, dtype, method)
        candidates.append(Candidate(f"tachyflow-{method}", run, ok))
    if peer and peer_available():
        run, ok, cleanup, peer_version = _peer_candidate(
            comm, decomposition.global_shape, decomposition.proc_grid, dtype
        )
        candidates.append(
            Candidate(PEER_NAME, run, ok, peer=True, details={"version": peer_version})
        )
        cleanups.append(cleanup)
    elif peer:
        document["peers_missing"] = {PEER_NAME: PEER_INSTALL_HINT + " and libfftw3-dev"}
    shape_text = "x".join(map(str, decomposition.global_shape))
    measure(
        document,
        candidates,
        comm,
        repeats,
        warmup,
        f"transpose {shape_text}",
        bytes_moved=4 * global_bytes,
    )
    for cleanup in cleanups:
        cleanup()
    decomposition.free()
    return document


def stem(document: dict) -> str:
    """File name stem: ``transpose_128x128x128_2x1_float64``."""
    return file_stem(document, document["params"]["dtype"])


def plot(document: dict, path) -> Path:
    """Box plot of the round-trip samples of every candidate, made from the document alone."""
    title = grid_title(document, f"Pencil transposes ({document['params']['dtype']})")
    return plot_samples(
        document, path, title, "round trip x→y→z→y→x [ms] (lower is better)", peer_name=PEER_NAME
    )

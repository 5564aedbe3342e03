"""``tachyflow bench poisson``: the pressure Poisson solve against an FFT round trip.

Ours: :class:`~tachyflow.solvers.pencil.poisson.PoissonSolver` on a channel grid (x, z periodic,
walls in y), fields in y-pencils. Verified first on an exact discrete eigenfunction
``cos(2πx/Lx) cos(πy/Ly) cos(2πz/Lz)`` of the operator, whose solution is known in closed
form. The peers, on the same grid and process grid, interleaved with ours sample by sample:

- 2DECOMP&FFT v2.1.0 (Fortran, FFTW), built by ``make install-bench`` and run as its own
  MPI job (:mod:`tachyflow.bench.peers.decomp`): a Poisson solve, verified on an
  eigenfunction, made of a full 3-D FFT (``decomp_2d_fft_3d``: r2c in x, c2c in y and z,
  with the x→y→z transposes), a division by the eigenvalues of the periodic second-order
  Laplacian, and the 3-D c2r FFT back (periodic in y too: 2DECOMP&FFT has no Neumann
  transform); and the bare r2c/c2r round trip. That is not the work ours does: it transforms
  in x and z only and solves tridiagonal systems in y, with transposes of its own (see
  :class:`~tachyflow.solvers.pencil.poisson.PoissonSolver`), so the ratio compares two
  solvers of the grid's Poisson equation, not one algorithm implemented twice;
- mpi4py-fft's ``PFFT`` forward + backward real-to-complex transform (FFTW; all three
  directions), verified by the round trip returning its input.

``speedup_vs_peer`` is against the first verified one (2DECOMP&FFT's Poisson solve when
built), ``speedup_vs_peers`` against each. Ours is timed with blocking transposes (the
default), overlapped ones, and overlapped with progress calls, interleaved
(:mod:`tachyflow.bench.overlap`: ``overlap`` holds the speed-ups), and on a ``p_row × 1``
grid with its z-slabs off (:mod:`tachyflow.bench.slabs`: ``slabs``).
"""

from __future__ import annotations

import numpy as np

from tachyflow import runtime
from tachyflow.bench import overlap, slabs
from tachyflow.bench.harness import PEER_INSTALL_HINT, Candidate, measure
from tachyflow.bench.peers import decomp
from tachyflow.bench.plots import file_stem, grid_title, plot_samples
from tachyflow.bench.results import grid_params, new_results
from tachyflow.bench.transpose import peer_available
from tachyflow.numerics import fft
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import PencilDecomposition
from tachyflow.solvers.pencil.poisson import PoissonSolver

PEER_NAME = "mpi4py-fft"
OURS = "tachyflow-poisson"
LENGTHS = (2 * np.pi, 2.0, np.pi)


def eigenfunction(decomposition: PencilDecomposition, grid: StaggeredGrid):
    """Local y-pencil of an exact eigenfunction of the discrete operator, and its eigenvalue.

    Uniform walled y: ``cos(π y / Ly)`` at cell centres is an eigenvector of the Neumann
    second difference with eigenvalue ``-(2 - 2 cos(π / ny)) / h²``.
    """
    pencil = decomposition.pencils["y"]
    nx, ny, nz = grid.shape
    x = (np.arange(pencil.start[0], pencil.stop[0]) + 0.5) * grid.spacing_x
    z = (np.arange(pencil.start[2], pencil.stop[2]) + 0.5) * grid.spacing_z
    y = grid.centres_y
    field = (
        np.cos(2 * np.pi * x / grid.lengths[0])[:, None, None]
        * np.cos(np.pi * y / grid.lengths[1])[None, :, None]
        * np.cos(2 * np.pi * z / grid.lengths[2])[None, None, :]
    )
    spacing_y = grid.lengths[1] / ny
    eigenvalue = (
        fft.laplacian_eigenvalues(nx, grid.spacing_x)[1]
        + fft.laplacian_eigenvalues(nz, grid.spacing_z)[1]
        - (2.0 - 2.0 * np.cos(np.pi / ny)) / spacing_y**2
    )
    return np.ascontiguousarray(field), eigenvalue


def _our_candidates(decomposition, grid) -> list[Candidate]:
    """Ours with blocking transposes, overlapped ones, and overlapped with progress calls
    (:mod:`tachyflow.bench.overlap`), each verified."""
    solver = PoissonSolver(decomposition, grid)
    solution, eigenvalue = eigenfunction(decomposition, grid)
    rhs = eigenvalue * solution
    out = np.empty_like(rhs)
    error = 0.0
    fits = solver.slabs  # z-slabs, where the process grid has them
    for overlapped, sliced in ((True, True), (False, True), (False, False)):
        solver.overlap = overlapped
        solver.slabs = sliced and fits
        solver.solve(rhs, out)
        error = max(error, float(np.abs(out - solution).max(initial=0.0)))
    solver.slabs = fits

    def run():
        return solver.solve(rhs, out)

    switch, details = overlap.switch_of(solver), {"max_error": error}
    return overlap.candidates(OURS, run, error < 1e-10, switch, details=details) + (
        slabs.candidates(OURS, run, error < 1e-10, switch, solver, details=details)
    )


def _peer_candidate(comm, shape, proc_grid):
    import mpi4py_fft
    from mpi4py_fft import PFFT, newDistArray

    transform = PFFT(comm, shape, axes=(0, 1, 2), dtype=np.float64, grid=proc_grid)
    physical = newDistArray(transform, False)
    spectral = newDistArray(transform, True)
    back = newDistArray(transform, False)
    physical[:] = np.random.default_rng(comm.Get_rank()).standard_normal(physical.shape)

    def run():
        transform.forward(physical, spectral)
        transform.backward(spectral, back)

    run()
    error = float(np.abs(back - physical).max(initial=0.0))
    candidate = Candidate(
        PEER_NAME,
        run,
        error < 1e-10,
        peer=True,
        details={"version": mpi4py_fft.__version__, "max_error": error},
    )
    return candidate, transform.destroy


def run_poisson_benchmark(
    global_shape, proc_grid=None, repeats=10, warmup=2, peer=True, comm=None, decomp_folder=None
) -> dict:
    """Measure Poisson solves; return the results document (collective over ``comm``).

    ``decomp_folder`` holds the pipes of a 2DECOMP&FFT driver started beside this job
    (:func:`tachyflow.bench.peers.decomp.start`); without it that peer is recorded in
    ``peers_missing`` with the reason.
    """
    comm = runtime.world() if comm is None else comm
    decomposition = PencilDecomposition(
        global_shape, proc_grid, comm, periodic=(True, False, True)
    )
    grid = StaggeredGrid(decomposition.global_shape, LENGTHS, periodic_y=False)
    params = grid_params(
        decomposition,
        repeats,
        warmup,
        operation="Poisson solve (FFT x, z; TDMA y); peers: 2DECOMP&FFT Poisson solve "
        "(FFT x, y, z) and r2c round trip, mpi4py-fft r2c round trip",
        boundaries="x, z periodic; y walls (Neumann)",
    )
    document = new_results("poisson", params, comm)
    candidates = _our_candidates(decomposition, grid)
    cleanups = []
    missing = {}
    if peer and decomp_folder is not None:
        found, close, why_not = decomp.candidates(
            decomp_folder, decomposition.global_shape, decomposition.proc_grid, LENGTHS, comm
        )
        candidates += found
        cleanups.append(close)
        if why_not:
            missing["2DECOMP&FFT"] = why_not
    elif peer:
        missing["2DECOMP&FFT"] = decomp.missing_reason()
    if peer and peer_available():
        candidate, cleanup = _peer_candidate(
            comm, decomposition.global_shape, decomposition.proc_grid
        )
        candidates.append(candidate)
        cleanups.append(cleanup)
    elif peer:
        missing[PEER_NAME] = PEER_INSTALL_HINT + " and libfftw3-dev"
    if missing:
        document["peers_missing"] = missing
    shape_text = "x".join(map(str, decomposition.global_shape))
    measure(document, candidates, comm, repeats, warmup, f"poisson {shape_text}")
    overlap.record(document, OURS)
    slabs.record(document, OURS)
    for cleanup in cleanups:
        cleanup()
    decomposition.free()
    return document


def stem(document: dict) -> str:
    """File name stem: ``poisson_128x128x128_2x1``."""
    return file_stem(document)


def plot(document: dict, path):
    """Box plot of solve times and the peers' solves and round trips."""
    title = grid_title(document, "Poisson solve vs peers")
    peer = next((p["name"] for p in document["peers"] if p["verified"]), None)
    return plot_samples(document, path, title, "time per solve / round trip [ms]", peer)

"""The distributed 3-D FFT of a periodic box and its spectra: the transform of a known
field exact, the random isotropic field the same on 1, 2 and 3 ranks, and the built-in
decaying-turbulence case starting from the measured spectrum."""

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow import config
from tachyflow.parallel import PencilDecomposition
from tachyflow.solvers.pencil.incompressible import IncompressibleSolver
from tachyflow.solvers.pencil.spectrum import BoxSpectrum

SHAPE = (12, 10, 8)
LENGTHS = (2 * np.pi, 2 * np.pi, 2 * np.pi)


def box(comm, proc_grid):
    decomposition = PencilDecomposition(SHAPE, proc_grid, comm)
    return decomposition, BoxSpectrum(decomposition, LENGTHS)


@pytest.mark.parallel([1, 2, 3])
def test_the_transform_of_a_mode_and_back():
    comm = MPI.COMM_WORLD
    decomposition, spectrum = box(comm, (comm.size, 1))
    pencil = decomposition.pencils["y"]
    x, y, z = (((np.arange(a, b) + 0.0) * 2 * np.pi / n)
               for a, b, n in zip(pencil.start, pencil.stop, SHAPE, strict=True))
    field = np.cos(2 * x[:, None, None] + 3 * y[None, :, None] - z[None, None, :]) + 0.5
    energy = spectrum.energy([field, 0 * field, 0 * field])
    expected = np.zeros(len(spectrum.wavenumbers))
    expected[0], expected[round(np.sqrt(14))] = 0.125, 0.25
    parallel_assert(np.allclose(energy, expected, atol=1e-14), f"{energy} != {expected}")
    back = spectrum.inverse(spectrum.forward(field))
    parallel_assert(np.abs(back - field).max() < 1e-13, "the inverse is not the inverse")
    decomposition.free()


@pytest.mark.parallel([1, 2, 3])
def test_the_random_field_is_the_same_on_any_rank_count():
    comm = MPI.COMM_WORLD
    k, e = np.array([1.0, 3.0, 6.0]), np.array([1.0, 2.0, 0.5])
    pieces = {}
    for name, (communicator, grid) in {"many": (comm, (1, comm.size)),
                                       "one": (MPI.COMM_SELF, (1, 1))}.items():
        decomposition, spectrum = box(communicator, grid)
        velocity = spectrum.random_velocity(k, e, 7, (0.5, 0.6, 0.8))
        pieces[name] = [decomposition.gather_global(v, "y") for v in velocity]
        decomposition.free()
    if comm.rank == 0:
        for many, one in zip(pieces["many"], pieces["one"], strict=True):
            np.testing.assert_allclose(many, one, rtol=0, atol=1e-14)


@pytest.mark.parallel([1, 2])
def test_the_isotropic_case_starts_from_the_measured_spectrum():
    comm = MPI.COMM_WORLD
    case = config.load("isotropic-decay").replace("grid", cells=(24, 24, 24)).replace(
        "parallel", proc_grid=(comm.size, 1))
    solver = IncompressibleSolver.from_case(case, comm, "estimate")
    spectrum = BoxSpectrum(solver.decomposition, case.grid.lengths)
    energy = spectrum.energy([solver.halo.interior(f) for f in solver.velocity_arrays()])
    from tachyflow.solvers.pencil.spectrum import reference_spectra

    reference_k, reference = reference_spectra(case)
    measured = np.interp(spectrum.wavenumbers[2:], reference_k, reference["42"])
    ratio = energy[2:].sum() / measured.sum()
    parallel_assert(0.9 < ratio < 1.1, f"initial energy {ratio:.3f} of the measured")
    divergence = solver.max_divergence()
    parallel_assert(divergence < 1e-11, f"the initial field is not solenoidal: {divergence}")
    solver.free()
    solver.decomposition.free()

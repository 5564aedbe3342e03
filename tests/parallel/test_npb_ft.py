import math

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.parallel import PencilDecomposition, process_grids
from tachyflow.programs.npb import ft
from tachyflow.programs.npb.common import report
from tachyflow.programs.npb.random import A, vranlc


def _same_everywhere(comm, result) -> bool:
    mine = (result.seconds, result.timings, [c for c, _, _ in result.checks.values()])
    return all(other == mine for other in comm.allgather(mine))


@pytest.mark.parallel([1, 2, 3])
def test_class_s_matches_all_six_npb_checksums():
    comm = MPI.COMM_WORLD
    result = ft.run("S", comm)
    parallel_assert(result.verified, report(result))
    parallel_assert(len(result.checks) == 6 and result.iterations == 6)
    parallel_assert(result.size == "64x64x64" and result.ranks == comm.size)
    parallel_assert(result.mops is not None and result.mops > 0)
    parallel_assert(set(result.timings) == {"computation", "communication"})
    parallel_assert(_same_everywhere(comm, result), "ranks disagree on the result")


@pytest.mark.parallel(2)
def test_class_w_matches_all_six_npb_checksums_on_two_ranks():
    result = ft.run("W", MPI.COMM_WORLD)
    parallel_assert(result.verified, report(result))
    parallel_assert(result.size == "128x128x32" and len(result.checks) == 6)


@pytest.mark.parallel([1, 2])
@pytest.mark.parametrize(
    ("hooked", "orientation"), [("initial_conditions", "x"), ("evolution_factors", "z")]
)
def test_one_perturbed_element_fails_verification_without_mops(monkeypatch, hooked, orientation):
    original = getattr(ft, hooked)

    def perturbed(decomposition, out):
        original(decomposition, out)
        # Only the rank holding the global origin changes it, by one part in a million.
        if out.size and decomposition.pencils[orientation].start == (0, 0, 0):
            out[0, 0, 0] *= 1.0 + 1e-6
        return out

    monkeypatch.setattr(ft, hooked, perturbed)
    result = ft.run("S", MPI.COMM_WORLD)
    parallel_assert(not result.verified and result.mops is None)
    parallel_assert("UNSUCCESSFUL" in report(result) and "Mop/s" not in report(result))


@pytest.mark.parallel([1, 2, 3])
def test_initial_field_is_npbs_stream_in_fortran_order_on_every_process_grid():
    comm = MPI.COMM_WORLD
    shape = (6, 5, 7)
    draws = np.empty(2 * math.prod(shape))
    vranlc(draws.size, ft.SEED, A, draws)
    expected = draws.view(np.complex128).reshape(shape, order="F")
    failures = []
    for grid in process_grids(comm.size):
        with PencilDecomposition(shape, grid, comm) as decomposition:
            field = ft.initial_conditions(decomposition, decomposition.zeros("x", np.complex128))
            whole = decomposition.gather_global(field, "x")
            if comm.rank == 0 and not np.array_equal(whole, expected):
                failures.append(grid)
    parallel_assert(not comm.bcast(failures), f"wrong initial field on grids {failures}")


def test_evolution_factors_fold_indices_as_npb():
    with PencilDecomposition((8, 4, 2), None, MPI.COMM_SELF) as decomposition:
        factors = ft.evolution_factors(decomposition, decomposition.zeros("z"))
    # Indices 0..7 fold to 0 1 2 3 -4 -3 -2 -1; 0..3 to 0 1 -2 -1; 0..1 to 0 -1.
    squares = np.add.outer(np.add.outer([0, 1, 4, 9, 16, 9, 4, 1], [0, 1, 4, 1]), [0, 1])
    expected = np.exp(-4.0 * ft.ALPHA * math.pi * math.pi * squares)
    np.testing.assert_allclose(factors, expected, rtol=1e-15, atol=0)


def test_operation_count_is_npb_fts_formula():
    spec = ft.CLASSES["A"]
    n = float(spec.ntotal)
    formula = n * (14.8157 + 7.19641 * math.log(n) + (5.23518 + 7.21113 * math.log(n)) * 6)
    # Equal up to NPB's single-precision literals (a few parts in 1e8).
    assert ft.operation_count(spec) == pytest.approx(formula, rel=1e-7)
    assert ft.operation_count(spec) != formula


def test_reference_checksums_start_with_the_published_first_iteration():
    first = {name: spec.checksums[0] for name, spec in ft.CLASSES.items()}
    assert first == {
        "S": complex(554.6087004964, 484.5363331978),
        "W": complex(567.3612178944, 529.3246849175),
        "A": complex(504.6735008193, 511.4047905510),
    }
    assert all(len(spec.checksums) == spec.niter == 6 for spec in ft.CLASSES.values())


def test_unknown_class_is_refused_by_name():
    with pytest.raises(ValueError, match=r"one of S, W, A, got 'Q'"):
        ft.run("Q", MPI.COMM_SELF)

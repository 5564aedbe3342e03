import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.programs.npb import cg
from tachyflow.programs.npb.common import report


def same_on_every_rank(comm, value) -> bool:
    return all(other == value for other in comm.allgather(value))


@pytest.mark.parallel([1, 2, 3])
def test_class_s_verifies_against_npb_zeta():
    comm = MPI.COMM_WORLD
    result = cg.run("S", comm)
    zeta, reference, tolerance = result.checks["zeta"]
    parallel_assert(result.verified, f"zeta {zeta!r} against {reference!r}")
    parallel_assert(abs(zeta - 8.5971775078648) / 8.5971775078648 <= 1e-10)
    parallel_assert(tolerance == 1e-10)
    parallel_assert(same_on_every_rank(comm, zeta), "ranks disagree on zeta")
    parallel_assert(same_on_every_rank(comm, result.seconds), "ranks disagree on seconds")
    parallel_assert((result.size, result.iterations, result.ranks) == ("1400", 15, comm.size))
    parallel_assert(set(result.timings) == {"computation", "communication"})
    parallel_assert(result.mops == pytest.approx(result.operations / result.seconds / 1e6))
    parallel_assert("SUCCESSFUL" in report(result) and "UNSUCCESSFUL" not in report(result))


@pytest.mark.parallel([2])
def test_class_w_verifies_on_two_ranks():
    result = cg.run("W", MPI.COMM_WORLD)
    parallel_assert(result.verified, f"zeta {result.checks['zeta']}")
    parallel_assert(result.mops is not None and result.mops > 0)


@pytest.mark.parallel([1, 2])
def test_a_perturbed_zeta_is_unsuccessful(monkeypatch):
    exact = cg._residual_norms

    def corrupted(rowstr, colidx, values, z_full, lo, x, sums):
        exact(rowstr, colidx, values, z_full, lo, x, sums)
        sums[1] *= 1.0 + 1e-8  # x.z off by far more than the check's 1e-10

    monkeypatch.setattr(cg, "_residual_norms", corrupted)
    result = cg.run("S", MPI.COMM_WORLD)
    parallel_assert(not result.verified)
    parallel_assert(result.mops is None)
    parallel_assert("UNSUCCESSFUL" in report(result))


@pytest.mark.parallel([1])
def test_operation_count_is_npb_formula():
    # cg.f90: 2*niter*na*(3 + nonzer*(nonzer+1) + 25*(5 + nonzer*(nonzer+1)) + 3)
    parallel_assert(cg.operations(cg.CLASSES["A"]) == 2 * 15 * 14000 * (3 + 132 + 25 * 137 + 3))
    parallel_assert(cg.operations(cg.CLASSES["B"]) == 2 * 75 * 75000 * (3 + 182 + 25 * 187 + 3))


@pytest.mark.parallel([1])
def test_matrix_is_symmetric_and_row_blocks_are_its_rows():
    problem = cg.CLASSES["S"]
    rowstr, colidx, values = cg.make_matrix(problem, 0, problem.na)
    dense = np.zeros((problem.na, problem.na))
    rows = np.repeat(np.arange(problem.na), np.diff(rowstr))
    dense[rows, colidx] = values
    # Symmetric up to rounding: NPB forms entry (j, k) as v_k (size v_j) and (k, j) as
    # v_j (size v_k).
    parallel_assert(np.allclose(dense, dense.T, rtol=1e-14, atol=0), "matrix not symmetric")
    lo, hi = 500, 901
    block = cg.make_matrix(problem, lo, hi)
    parallel_assert(np.array_equal(block[0], rowstr[lo : hi + 1] - rowstr[lo]))
    parallel_assert(np.array_equal(block[1], colidx[rowstr[lo] : rowstr[hi]]))
    parallel_assert(np.array_equal(block[2], values[rowstr[lo] : rowstr[hi]]))


@pytest.mark.parallel([1])
def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="'Z'"):
        cg.run("Z", MPI.COMM_WORLD)
    with pytest.raises(ValueError, match="lo=10, hi=5"):
        cg.make_matrix(cg.CLASSES["S"], 10, 5)

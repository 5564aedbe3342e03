import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.programs.npb import mg
from tachyflow.programs.npb.common import report
from tachyflow.programs.npb.random import A, vranlc


def supported(n, size):
    return size & (size - 1) == 0 and 2 * size <= n


@pytest.mark.parallel([1, 2, 3])
def test_class_s_verifies_or_every_rank_refuses_the_rank_count():
    comm = MPI.COMM_WORLD
    if not supported(32, comm.size):
        with pytest.raises(ValueError, match=rf"power of two no larger than 16, got {comm.size}"):
            mg.run("S", comm)
        return
    result = mg.run("S", comm)
    computed, reference, _ = result.checks["L2 norm of the residual"]
    everywhere = comm.allgather(computed)
    parallel_assert(result.verified, f"L2 norm {computed!r}, NPB {reference!r}")
    parallel_assert(len(set(everywhere)) == 1, f"ranks disagree: {everywhere}")
    parallel_assert(result.mops is not None and result.mops > 0)
    parallel_assert(result.operations == 58.0 * 4 * 32**3)
    parallel_assert(result.size == "32x32x32" and result.iterations == 4)
    parallel_assert(set(result.timings) == {"computation", "communication"})
    parallel_assert("SUCCESSFUL" in report(result))


@pytest.mark.parallel([1, 2])
def test_right_hand_side_has_npbs_charges_at_npbs_extremes():
    comm = MPI.COMM_WORLD
    n = 16
    field = np.empty(n**3)
    vranlc(n**3, mg.SEED, A, field)  # the whole field in Fortran order, one stream
    order = np.argsort(field, kind="stable")
    expected = np.zeros(n**3)
    expected[order[: mg.CHARGES]] = -1.0
    expected[order[-mg.CHARGES :]] = 1.0
    expected = expected.reshape(n, n, n)
    slab = mg.zran3(n, comm)
    whole = np.concatenate(comm.allgather(slab[1:-1, 1:-1, 1:-1]))
    parallel_assert(np.array_equal(whole, expected), "charges differ from NPB's extremes")
    # Periodic ghosts: the planes after the ends wrap around.
    ghosts = comm.allgather((slab[0, 1:-1, 1:-1].copy(), slab[-1, 1:-1, 1:-1].copy()))
    planes = n // comm.size
    low = np.concatenate([g[0][None] for g in ghosts])
    high = np.concatenate([g[1][None] for g in ghosts])
    starts = np.arange(comm.size) * planes
    parallel_assert(np.array_equal(low, expected[(starts - 1) % n]))
    parallel_assert(np.array_equal(high, expected[(starts + planes) % n]))
    parallel_assert(np.array_equal(slab[1:-1, 0, 1:-1], slab[1:-1, -2, 1:-1]))
    parallel_assert(np.array_equal(slab[1:-1, 1:-1, -1], slab[1:-1, 1:-1, 1]))


@pytest.mark.parallel([1, 2])
def test_a_perturbed_norm_is_unsuccessful_and_has_no_mops(monkeypatch):
    comm = MPI.COMM_WORLD
    exact = mg.norm2u3

    def perturbed(r, points, exchange):
        rnm2, rnmu = exact(r, points, exchange)
        return rnm2 * (1.0 + 1e-6), rnmu

    monkeypatch.setattr(mg, "norm2u3", perturbed)
    result = mg.run("S", comm)
    parallel_assert(not result.verified)
    parallel_assert(result.mops is None)
    parallel_assert("UNSUCCESSFUL" in report(result))


@pytest.mark.parallel(2)
def test_class_w_verifies_on_two_ranks():
    result = mg.run("W", MPI.COMM_WORLD)
    computed, reference, _ = result.checks["L2 norm of the residual"]
    parallel_assert(result.verified, f"L2 norm {computed!r}, NPB {reference!r}")


@pytest.mark.parallel(1)
def test_unknown_class_is_refused():
    with pytest.raises(ValueError, match="'Q'"):
        mg.run("Q", MPI.COMM_WORLD)

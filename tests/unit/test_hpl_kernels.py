"""The MPI-free pieces of HPL: in-place BLAS/LAPACK on blocks, the random matrix, the
bookkeeping of row interchanges, one elimination step and the block-cyclic layout."""

import numpy as np
import pytest
import scipy.linalg as sl

from tachyflow.numerics import dense
from tachyflow.numerics.lu import (
    eliminate_column,
    interchange_sources,
    pivot_candidate,
    random_block,
)
from tachyflow.parallel.process_grid import BlockCyclic


@pytest.fixture
def big():
    return np.asfortranarray(np.random.default_rng(3).uniform(-1, 1, (60, 50)))


def test_gemm_updates_a_block_of_a_larger_matrix_in_place(big):
    rng = np.random.default_rng(1)
    a = np.asfortranarray(rng.random((45, 6)))
    b = np.asfortranarray(rng.random((7, 20)))[1:, 3:15]  # a block too
    expected = big.copy()
    expected[15:, 20:32] -= a @ b
    dense.gemm_update(big[15:, 20:32], a, b)
    np.testing.assert_allclose(big, expected, rtol=0, atol=1e-13)  # nothing else touched


def test_triangular_solve_in_place(big):
    lower = np.asfortranarray(np.tril(big[:8, :8], -1) + np.eye(8))
    expected = big.copy()
    expected[8:16, 10:30] = sl.solve_triangular(
        lower, big[8:16, 10:30], lower=True, unit_diagonal=True
    )
    dense.solve_unit_lower(big[:8, :8], big[8:16, 10:30])  # only the unit lower part is read
    np.testing.assert_allclose(big, expected, rtol=1e-12, atol=1e-12)


def test_lu_factor_in_place_is_lapack_getrf_and_reconstructs_the_block(big):
    block = big[5:, 10:30]
    original = block.copy()
    reference, pivots_ref, _ = sl.lapack.dgetrf(original)
    pivots, zero = dense.lu_factor_in_place(block)
    assert zero == -1
    np.testing.assert_array_equal(pivots, pivots_ref)
    np.testing.assert_allclose(block, reference, rtol=0, atol=1e-13)
    lower = np.tril(block, -1)[:, :20] + np.eye(55, 20)
    permuted = original.copy()
    for i, p in enumerate(pivots):
        permuted[[i, p]] = permuted[[p, i]]
    np.testing.assert_allclose(lower @ np.triu(block[:20]), permuted, atol=1e-12)


def test_a_zero_column_is_reported_as_the_first_zero_pivot():
    a = np.asfortranarray(np.random.default_rng(0).random((8, 5)))
    a[:, 2] = a[:, 0] * 0.0
    _, zero = dense.lu_factor_in_place(a)
    assert zero == 2


def test_swap_rows_applies_the_interchanges_in_order(big):
    expected = big.copy()
    pivots = np.array([9, 4, 4, 30])
    for i, p in enumerate(pivots):
        expected[[3 + i, p], 7:19] = expected[[p, 3 + i], 7:19]
    dense.swap_rows(big[:, 7:19], 3, pivots)
    np.testing.assert_array_equal(big, expected)
    with pytest.raises(ValueError, match="out of range"):
        dense.swap_rows(big, 58, pivots)


def test_row_major_and_wrongly_typed_arrays_are_refused():
    c_order = np.zeros((4, 4))
    with pytest.raises(ValueError, match="column-major"):
        dense.gemm_update(c_order, np.zeros((4, 2), order="F"), np.zeros((2, 4), order="F"))
    with pytest.raises(ValueError, match="float64"):
        dense.lu_factor_in_place(np.zeros((4, 4), dtype=np.float32, order="F"))
    with pytest.raises(ValueError, match="shapes do not match"):
        dense.gemm_update(np.zeros((4, 4), order="F"), np.zeros((4, 2)), np.zeros((3, 4)))


def test_random_matrix_depends_on_global_indices_only():
    whole = random_block(np.arange(40), np.arange(41), seed=7)
    rows, columns = np.array([3, 17, 39]), np.array([0, 40, 5, 22])
    piece = random_block(rows, columns, seed=7)
    np.testing.assert_array_equal(piece, whole[np.ix_(rows, columns)])
    assert whole.min() >= -0.5 and whole.max() < 0.5
    assert abs(whole.mean()) < 0.05 and abs(whole.std() - 12**-0.5) < 0.02
    assert not np.array_equal(whole, random_block(np.arange(40), np.arange(41), seed=8))
    out = np.zeros((50, 50), order="F")
    random_block(np.arange(40), np.arange(41), seed=7, out=out[5:45, 2:43])
    np.testing.assert_array_equal(out[5:45, 2:43], whole)
    with pytest.raises(ValueError, match="indices"):
        random_block([-1], [0])
    with pytest.raises(ValueError, match="out must be"):
        random_block([0, 1], [0], out=np.zeros((3, 1)))


def test_interchange_sources_agree_with_swapping_rows():
    rng = np.random.default_rng(5)
    for _ in range(50):
        first, count, length = 10, 6, 40
        pivots = np.array([rng.integers(first + i, length) for i in range(count)])
        rows = np.arange(length)
        for i, p in enumerate(pivots):
            rows[[first + i, p]] = rows[[p, first + i]]
        top, moved, moved_from = interchange_sources(first, pivots)
        np.testing.assert_array_equal(top, rows[first : first + count])
        changed = np.flatnonzero(rows != np.arange(length))
        changed = changed[changed >= first + count]
        np.testing.assert_array_equal(moved, changed)
        np.testing.assert_array_equal(moved_from, rows[changed])
    with pytest.raises(ValueError, match="at or below"):
        interchange_sources(10, [9])


def test_elimination_step_is_a_scaled_rank_one_update():
    panel = np.asfortranarray(np.random.default_rng(2).random((9, 5)))
    pivot_row = np.array([0.1, 4.0, 2.0, -1.0, 3.0])
    expected = panel.copy()
    expected[3:, 1] /= 4.0
    expected[3:, 2:4] -= np.outer(expected[3:, 1], pivot_row[2:4])
    eliminate_column(panel, 3, 1, 4, pivot_row)
    np.testing.assert_allclose(panel, expected, rtol=1e-15)
    assert pivot_candidate(np.array([1.0, -3.0, 3.0])) == 1
    assert pivot_candidate(np.array([])) == -1


@pytest.mark.parametrize("length, block, parts", [(10, 3, 2), (7, 10, 3), (100, 7, 3), (0, 4, 2)])
def test_block_cyclic_pieces_partition_the_indices(length, block, parts):
    pieces = [BlockCyclic(length, block, p, parts) for p in range(parts)]
    held = np.sort(np.concatenate([piece.indices for piece in pieces]))
    np.testing.assert_array_equal(held, np.arange(length))
    for p, piece in enumerate(pieces):
        assert np.all(piece.owner(piece.indices) == p)
        assert np.all(np.diff(piece.indices) > 0)
        for b in range(-(-length // block)):
            start, stop = piece.block_span(b)
            expected = (
                [i for i in range(b * block, min(length, (b + 1) * block))]
                if (b % parts == p)
                else []
            )
            assert piece.indices[start:stop].tolist() == expected


def test_block_cyclic_refuses_bad_layouts():
    with pytest.raises(ValueError, match="block >= 1"):
        BlockCyclic(10, 0, 0, 2)
    with pytest.raises(ValueError, match="coordinate"):
        BlockCyclic(10, 2, 2, 2)


def test_command_offers_exactly_the_solver_broadcasts():
    from tachyflow.commands.bench.hpl import BROADCAST_CHOICES, default_grid
    from tachyflow.programs.hpl.solver import BROADCASTS

    assert set(BROADCAST_CHOICES) == set(BROADCASTS)
    assert [default_grid(r) for r in (1, 2, 3, 4, 6, 12)] == [
        (1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (3, 4)
    ]


HPCC_OUTPUT = """Begin of HPL section.
================================================================================
T/V                N    NB     P     Q               Time                 Gflops
--------------------------------------------------------------------------------
WR11C2R4        3000   192     1     2              10.01              1.800e+00
--------------------------------------------------------------------------------
||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=        0.0036002 ...... PASSED
================================================================================
WR11C2R4         500   192     1     2               0.02              3.562e+00
--------------------------------------------------------------------------------
||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=       17.1234 ...... FAILED
================================================================================
End of HPL section.
WR11C2R4        9999   192     1     2               1.00              9.000e+00
"""


def test_hpcc_input_and_output_are_read_as_hpl_writes_them():
    from tachyflow.bench.peers.hpcc import input_file, parse_output

    text = input_file([3000, 500], 192, 1, 2).splitlines()
    assert text[4].split()[0] == "2" and text[5].split()[:2] == ["3000", "500"]
    assert text[7].split()[0] == "192" and text[10].split()[0] == "1"
    assert text[11].split()[0] == "2" and "DEPTHs" in text[24]
    first, second = parse_output(HPCC_OUTPUT)  # the line after the section is not HPL's
    assert first == {"n": 3000, "nb": 192, "proc_grid": [1, 2], "median": 10.01,
                     "gflops": 1.8, "residual": 0.0036002, "residual_passed": True}
    assert second["n"] == 500 and second["residual_passed"] is False

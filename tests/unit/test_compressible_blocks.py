"""The one-rank stand-in for the structured block decomposition: the wake-cut exchange
and ghost nodes; and the grid-end outflow condition."""

import numpy as np
from mpi4py import MPI

from tachyflow.numerics.compressible import boundaries
from tachyflow.numerics.compressible.gas import FreeStream, conservative, primitive
from tachyflow.numerics.compressible.grids import extrapolate_ghost_nodes
from tachyflow.numerics.compressible.metrics import BlockMetrics
from tachyflow.solvers.compressible import SingleBlock

G = 2


def test_single_block_exchange_fills_the_wake_cut_only():
    ni, nj, wake = 12, 5, 3
    block = SingleBlock(MPI.COMM_SELF, ni, nj, G, wake)
    array = np.random.default_rng(0).random((2, ni + 2 * G, nj + 2 * G))
    before = array.copy()
    block.exchange(array)
    for i in range(ni):
        for k in range(G):
            ghost = array[:, G + i, G - 1 - k]
            if i < wake or i >= ni - wake:
                assert np.array_equal(ghost, before[:, G + ni - 1 - i, G + k])
            else:
                assert np.array_equal(ghost, before[:, G + i, G - 1 - k])
    changed = array != before
    changed[:, G : G + ni, :G] = False
    assert not changed.any()
    sides = {(side, kind, start, stop) for side, kind, start, stop in block.boundary_sides()}
    assert ("j_low", "wall", wake, ni - wake) in sides
    assert ("j_low", "wake", 0, wake) in sides and ("j_low", "wake", ni - wake, ni) in sides


def test_single_block_ghost_nodes_mirror_across_the_wake_cut():
    ni, nj, wake = 10, 4, 3
    s = np.linspace(-1, 1, ni + 1)
    x, y = np.meshgrid(np.abs(s) * 2, np.linspace(0, 1, nj + 1), indexing="ij")
    y = y * np.sign(s)[:, None] + 0.01 * s[:, None]  # a C-shaped fold at i = ni / 2
    px, py = SingleBlock(MPI.COMM_SELF, ni, nj, G, wake).node_piece(x, y)
    for i in list(range(wake + 1)) + list(range(ni - wake, ni + 1)):
        for k in range(1, G + 1):
            assert px[G + i, G - k] == x[ni - i, k] and py[G + i, G - k] == y[ni - i, k]


def test_outflow_keeps_a_leaving_boundary_layer_and_fixes_the_pressure():
    n = 6
    x, y = np.meshgrid(np.arange(n + 1.0), np.arange(n + 1.0), indexing="ij")
    metrics = BlockMetrics.from_nodes(*extrapolate_ghost_nodes(x, y, G), G)
    free_stream = FreeStream(mach=0.5)
    q = free_stream.primitive()[:, None, None] * np.ones(metrics.area.shape)
    q[1, :, G] = 0.1  # slow fluid near the wall leaves through i_high
    q[1, :, G + 1] = -0.2  # a row flowing back in
    q[3] *= 1.05
    U = conservative(q)
    boundaries.outflow(U, metrics, "i_high", free_stream.primitive())
    ghost = primitive(U)[:, -G:, :]
    assert np.allclose(ghost[1, :, G], 0.1) and np.allclose(ghost[3, :, G], 1 / 1.4)
    assert np.allclose(ghost[0, :, G], q[0, -G - 1, G])
    # Where the flow enters, the characteristic far field: between inside and outside.
    assert np.all(ghost[1, :, G + 1] > -0.2) and np.all(ghost[1, :, G + 1] < 0.5)

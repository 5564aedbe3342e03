"""The grid-end outflow condition of the compressible solver."""

import numpy as np

from tachyflow.numerics.compressible import boundaries
from tachyflow.numerics.compressible.gas import FreeStream, conservative, primitive
from tachyflow.numerics.compressible.grids import extrapolate_ghost_nodes
from tachyflow.numerics.compressible.metrics import BlockMetrics

G = 2


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

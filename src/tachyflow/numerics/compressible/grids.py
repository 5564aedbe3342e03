"""Ghost nodes of a block's node arrays (extrapolated at physical sides)."""

from __future__ import annotations

import numpy as np


def extrapolate_ghost_nodes(x, y, ghosts: int = 2, sides=("i_low", "i_high", "j_low", "j_high")):
    """Nodes ``(ni + 1, nj + 1)`` padded with ``ghosts`` layers, extrapolated linearly on
    ``sides`` (each ghost cell repeats the first cell's width); other sides stay zero for
    the caller (the exchange) to fill."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    g = ghosts
    out = []
    for a in (x, y):
        padded = np.zeros((a.shape[0] + 2 * g, a.shape[1] + 2 * g))
        padded[g:-g, g:-g] = a
        for k in range(1, g + 1):
            if "i_low" in sides:
                padded[g - k, g:-g] = a[0] - k * (a[1] - a[0])
            if "i_high" in sides:
                padded[-g - 1 + k, g:-g] = a[-1] + k * (a[-1] - a[-2])
        for k in range(1, g + 1):
            if "j_low" in sides:
                padded[:, g - k] = padded[:, g] - k * (padded[:, g + 1] - padded[:, g])
            if "j_high" in sides:
                padded[:, -g - 1 + k] = padded[:, -g - 1] + k * (
                    padded[:, -g - 1] - padded[:, -g - 2]
                )
        out.append(padded)
    return out[0], out[1]

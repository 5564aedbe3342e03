"""Figures written the same way everywhere: matplotlib without a display, atomic PNGs."""

from __future__ import annotations

from pathlib import Path

from tachyflow.io.files import replacing


def pyplot():
    """``matplotlib.pyplot`` on the Agg back end (no X server needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, path, dpi: int = 110) -> Path:
    """Lay ``figure`` out, write it as a PNG to ``path`` atomically, close it."""
    figure.tight_layout()
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=dpi, format="png")
    pyplot().close(figure)
    return Path(path)

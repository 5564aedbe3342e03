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


def save_figure(figure, path, dpi: int = 110, tight: bool = True) -> Path:
    """Lay ``figure`` out (``tight``: around its labels, which costs a second drawing;
    otherwise as its subplot parameters say), write it as a PNG to ``path`` atomically,
    close it."""
    if tight:
        figure.tight_layout()
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=dpi, format="png")
    pyplot().close(figure)
    return Path(path)

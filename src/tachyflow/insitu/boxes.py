"""Boxes of global cells: the part of a field a pipeline reads, or of a piece a rank sends.

A transit step carries each field on the box of cells its due pipelines read (a slice
reads two layers, an isosurface the whole grid), so a field only slices draw costs two
layers to make and to send instead of the whole grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral


@dataclass(frozen=True)
class CellBox:
    """Cells ``start[a] <= i < start[a] + shape[a]`` along x, y, z (global indices).

    Raises
    ------
    TypeError, ValueError
        ``start`` or ``shape`` not three non-negative integers.
    """

    start: tuple[int, int, int]
    shape: tuple[int, int, int]

    def __post_init__(self):
        for name in ("start", "shape"):
            values = getattr(self, name)
            if (
                isinstance(values, str)
                or not hasattr(values, "__len__")
                or len(values) != 3
                or not all(isinstance(v, Integral) and not isinstance(v, bool) for v in values)
            ):
                raise TypeError(f"a box's {name} must be three integers, got {values!r}")
            if min(values) < 0:
                raise ValueError(f"a box's {name} must not be negative, got {tuple(values)}")
            object.__setattr__(self, name, tuple(int(v) for v in values))

    @classmethod
    def whole(cls, shape) -> CellBox:
        """Every cell of a grid of ``shape`` cells."""
        return cls((0, 0, 0), tuple(shape))

    @property
    def stop(self) -> tuple[int, int, int]:
        """One past the last cell along each axis."""
        return tuple(a + n for a, n in zip(self.start, self.shape, strict=True))

    @property
    def size(self) -> int:
        """Number of cells."""
        return self.shape[0] * self.shape[1] * self.shape[2]

    @property
    def slices(self) -> tuple[slice, slice, slice]:
        """The box cut out of a global array."""
        return tuple(slice(a, b) for a, b in zip(self.start, self.stop, strict=True))

    def union(self, other: CellBox) -> CellBox:
        """The smallest box holding both."""
        start = tuple(min(a, b) for a, b in zip(self.start, other.start, strict=True))
        stop = tuple(max(a, b) for a, b in zip(self.stop, other.stop, strict=True))
        return CellBox(start, tuple(b - a for a, b in zip(start, stop, strict=True)))

    def intersection(self, other) -> CellBox:
        """The cells in both (``other``: anything with ``start`` and ``shape``, such as a
        :class:`~tachyflow.parallel.pencil.Pencil`); shape zero along an axis where they
        do not overlap."""
        other = CellBox(other.start, other.shape)
        start = tuple(max(a, b) for a, b in zip(self.start, other.start, strict=True))
        stop = tuple(min(a, b) for a, b in zip(self.stop, other.stop, strict=True))
        return CellBox(start, tuple(max(b - a, 0) for a, b in zip(start, stop, strict=True)))

    def within(self, outer) -> tuple[slice, slice, slice]:
        """Where this box lies in an array holding the cells of ``outer`` (anything with
        ``start`` and ``shape``); ValueError when it is not inside."""
        outer = CellBox(outer.start, outer.shape)
        if self.intersection(outer) != self:
            raise ValueError(f"{self} does not lie inside {outer}")
        return tuple(
            slice(a - b, a - b + n)
            for a, b, n in zip(self.start, outer.start, self.shape, strict=True)
        )

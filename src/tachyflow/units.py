"""Parsing of user-facing quantities."""

from __future__ import annotations

BYTE_UNITS = {
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "b": 1,
}


def parse_byte_size(text: str) -> int:
    """``8B``, ``64KiB``, ``1MiB``, ``1000`` -> bytes; ValueError on anything else."""
    lowered = str(text).strip().lower()
    suffix = next((unit for unit in BYTE_UNITS if lowered.endswith(unit)), "")
    try:
        value = float(lowered[: len(lowered) - len(suffix)]) * BYTE_UNITS.get(suffix, 1)
    except ValueError:
        value = -1.0
    if value < 0 or value != int(value):
        raise ValueError(f"expected a size like 8B, 64KiB or 1MiB, got {text!r}")
    return int(value)

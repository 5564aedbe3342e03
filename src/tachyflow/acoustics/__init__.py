"""Aeroacoustics: far-field noise from surface data (Ffowcs Williams–Hawkings)."""

from tachyflow.acoustics.fwh import FWHSignals, FWHSolver

__all__ = ["FWHSignals", "FWHSolver"]

"""Aeroacoustics: far-field noise from surface data (Ffowcs Williams–Hawkings)."""

from tachyflow.acoustics.fwh import FWHAccumulator, FWHSignals, FWHSolver

__all__ = ["FWHAccumulator", "FWHSignals", "FWHSolver"]

"""Visualisation of running simulations (batch images for now)."""

"""Kernels of the 2D compressible Navier–Stokes / RANS solver (MPINS2D in B.-S. Lee,
J.-W. Hong, S. Lee, D. H. Lee, "Performance Analysis of Cluster Network Interfaces for
Parallel Computing of Computational Fluid Dynamics").

MPI-free: everything takes the arrays of one structured block with ``g = 2`` ghost layers
and returns or fills arrays. The layout, shared with the block decomposition:

- state ``U``: conservative variables ``(nvar, ni + 2g, nj + 2g)``, ``nvar = 4``
  (``rho, rho u, rho v, rho E``) or 5 with Spalart–Allmaras, whose fifth variable is
  ``rho * nu_tilde`` (conservative: it is convected by the mass flux);
- nodes ``x, y``: ``(ni + 2g + 1, nj + 2g + 1)`` with the ghost nodes; cell ``(i, j)`` has
  corners ``(i, j), (i+1, j), (i+1, j+1), (i, j+1)``;
- non-dimensional variables: free-stream density 1, free-stream speed of sound 1 (so
  ``p_inf = 1/gamma``, ``|V_inf| = M``, ``T = gamma p / rho`` with ``T_inf = 1``), length
  unit the chord (plate length), viscosity ``mu_inf = M / Re``.

Modules: :mod:`.gas` (ideal gas, Sutherland), :mod:`.fluxes` (Roe, AUSM+-up),
:mod:`.reconstruction` (MUSCL), :mod:`.metrics` (faces, areas, wall distance),
:mod:`.residual` (the spatial operator: inviscid, viscous, SA), :mod:`.turbulence`
(Spalart–Allmaras), :mod:`.implicit` (LU-SGS / DP-SGS), :mod:`.boundaries` (ghost-cell
conditions), :mod:`.grids` (a flat-plate grid and ghost nodes).
"""

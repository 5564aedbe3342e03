"""The 2D compressible Navier–Stokes / RANS solver after MPINS2D, and its grids.

``solver``
    :class:`CompressibleSolver` (``solver = "compressible"``): one structured block per rank,
    ghost exchange, boundary conditions and the kernels of
    :mod:`tachyflow.numerics.compressible` in turn; LU-SGS / DP-SGS / RK3 / dual time
    stepping.
``grids``
    Grids by name (``[compressible] grid``): flat plates, the RAE 2822 and NACA 0012
    C-grids, a Plot3D or CGNS grid file.

The MPI-free kernels (fluxes, reconstruction, residuals, implicit sweeps, boundaries, gas
model) are in :mod:`tachyflow.numerics.compressible`; the airfoil sections, stretchings and
the C-grid generator in :mod:`tachyflow.numerics`.
"""

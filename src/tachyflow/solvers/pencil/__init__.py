"""The incompressible solvers on pencil decompositions, and what they share.

``incompressible``
    :class:`IncompressibleSolver` (``solver = "incompressible"``): Cartesian staggered grid,
    RK3 + Crank–Nicolson, the projection by the FFT/TDMA Poisson solve; the fused velocity
    update.
``cylindrical``
    :class:`CylindricalSolver` (``solver = "cylindrical"``): (x, r, θ) in a frame rotating
    about x, Verzicco & Orlandi's axis treatment, sectors.
``base``
    :class:`PencilSolver`: the RK3 step loop, the projection, inflow and convective outflow
    of an open x, immersed bodies (direct forcing, mass sources, loads).
``poisson``
    :class:`PoissonSolver`: FFT in x and z (a cosine transform where x is open), TDMA in y;
    on a cylindrical grid the θ eigenvalue weighted by 1/r².
``initial_conditions``
    The initial fields by name, for both solvers.
``bodies``
    Immersed-body shapes and motions by name (sphere, cylinder, slab, surface, fan-rotor).
``surface_loads``
    A body's force and moment from its surface triangles' traction.
"""

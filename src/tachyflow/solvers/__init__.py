"""The flow solvers, one package per family, behind the one interface of :mod:`.base`.

``base``
    :class:`~tachyflow.solvers.base.Solver` (what the run driver and observers may use of a
    solver), the capabilities a solver declares, and the registry that names solvers in
    case files.
``pencil/``
    The incompressible solvers on pencil decompositions: Cartesian and rotating cylindrical,
    their FFT/TDMA Poisson solver, immersed bodies and the axial-fan rotor.
``compressible/``
    The 2D compressible Navier–Stokes / RANS solver (MPINS2D) and its grids by name.
``unstructured/``
    The unstructured pressure solver (Jeon & Choi) and its ``pressure`` case.
``phase_clock``
    Exclusive wall time per nested phase, shared by every family.
"""

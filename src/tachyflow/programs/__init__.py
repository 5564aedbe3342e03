"""Benchmark programs re-implemented on tachyflow's layers, verified against their official
values.

:mod:`~tachyflow.programs.npb`
    The NAS Parallel Benchmark kernels CG, MG, FT, IS and EP (NPB 3.4.2).
:mod:`~tachyflow.programs.hpl`
    High-Performance Linpack's distributed LU solver and its scaled residual.

``tachyflow bench npb`` and ``bench hpl`` (:mod:`tachyflow.bench.npb`,
:mod:`tachyflow.bench.hpl`) time them beside the official programs.
"""

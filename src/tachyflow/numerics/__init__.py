"""MPI-free numerical kernels: they take local arrays and return arrays.

Nothing in this package imports MPI; everything here is tested serially and fast. Kernels
that loop over cells are compiled with numba.
"""

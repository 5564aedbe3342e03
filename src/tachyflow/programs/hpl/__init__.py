"""High-Performance Linpack: ``solver`` holds the distributed LU with partial pivoting of
HPL's system on a P × Q process grid (:class:`~tachyflow.programs.hpl.solver.DistributedLU`:
look-ahead 1, the panel broadcasts of ``BROADCASTS``), the triangular solve and HPL's
scaled residual.
"""

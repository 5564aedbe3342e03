"""The unstructured pressure solver (Jeon & Choi) and the case that runs it.

``solver``
    :class:`UnstructuredPressureSolver`: METIS partitions, interior / boundary / halo cells,
    Jacobi-preconditioned CG or BiCGSTAB.
``pressure_case``
    The ``pressure`` solver of case files: one Krylov solve a step behind the one solver
    interface.
"""

"""The NAS Parallel Benchmark kernels (NPB 3.4.2), verified against NPB's official values.

Kernels ``cg``, ``mg``, ``ft``, ``integer_sort`` (IS) and ``ep``: each has ``CLASSES`` and
``run(problem_class, comm) -> KernelResult``; ``common`` holds the result, its
verification and NPB's summary (:func:`~tachyflow.programs.npb.common.report`), and
``random`` NPB's random-number generator.
"""

"""The threads each rank's kernels use, as :mod:`tachyflow.runtime` decides them at launch.

The count, its environment and numba's start belong to the launch (:mod:`tachyflow.runtime`,
a base room below the kernels). :mod:`tachyflow.numerics.fft` still reads the count here;
once it imports :func:`tachyflow.runtime.threads_per_rank` itself, this module goes.
"""

from tachyflow.runtime import threads_per_rank

__all__ = ["threads_per_rank"]

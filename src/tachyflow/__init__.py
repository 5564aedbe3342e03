"""tachyflow: MPI-parallel CFD on distributed-memory clusters.

The package is layered (see ``docs/architecture.md``): ``runtime`` manages the MPI
lifecycle, ``parallel`` owns decompositions and data movement, ``bench`` measures them,
and ``cli`` is the ``tachyflow`` command.
"""

import os
from importlib.metadata import PackageNotFoundError, version

# MPI ranks fill the cores: one BLAS/OpenMP/numba thread each, unless the user chose
# otherwise (effective when tachyflow is imported before numpy and numba; `tachyflow -n`
# sets it for its ranks, `--threads T` gives them T each).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                  "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
del _variable

try:
    __version__ = version("tachyflow")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

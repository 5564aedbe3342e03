"""tachyflow: MPI-parallel CFD on distributed-memory clusters.

The package is layered (see ``docs/architecture.md``): ``runtime`` manages the MPI
lifecycle, ``parallel`` owns decompositions and data movement, ``bench`` measures them,
and ``cli`` is the ``tachyflow`` command.
"""

import os
from importlib.metadata import PackageNotFoundError, version

# MPI ranks fill the cores: one BLAS/OpenMP thread each, unless the user chose otherwise
# (effective when tachyflow is imported before numpy; `tachyflow -n` sets it for its ranks).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
del _variable

try:
    __version__ = version("tachyflow")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

"""tachyflow: MPI-parallel CFD on distributed-memory clusters.

The package is layered (see ``docs/architecture.md``): ``runtime`` manages the MPI
lifecycle, ``parallel`` owns decompositions and data movement, ``bench`` measures them,
and ``cli`` is the ``tachyflow`` command.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tachyflow")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

"""In transit: a run's fields streamed with ADIOS2 SST to separate reader processes.

The run writes with :class:`TransitWriter` (collective); any number of
:class:`TransitReader` processes attach, read and detach while it goes on, as in Tsutsumi
et al., "In Situ/In Transit Approaches for Post-Processing in Large-Scale Numerical
Simulation". The design and the measured behaviour of SST behind it are in
``docs/in-transit.md``.

Modules: :mod:`~.streams` (folder layout, one writer per stream), :mod:`~.sst` (engine
parameters, queue rules, CManager IDs), :mod:`~.manifest`, :mod:`~.aggregation` (pieces
to each group's first rank), :mod:`~.writer`, :mod:`~.reader`.
"""

from tachyflow.insitu.transit.manifest import FORMAT, MANIFEST, read_manifest
from tachyflow.insitu.transit.reader import TransitReader
from tachyflow.insitu.transit.sst import ATTACH_STEPS, QUEUE_FULL_POLICIES, QUEUE_HEADROOM
from tachyflow.insitu.transit.streams import (
    FOLDER,
    StreamInUseError,
    transit_folder,
    writer_alive,
)
from tachyflow.insitu.transit.writer import STEP_VARIABLES, TransitWriter, WriteTiming

__all__ = [
    "ATTACH_STEPS",
    "FOLDER",
    "FORMAT",
    "MANIFEST",
    "QUEUE_FULL_POLICIES",
    "QUEUE_HEADROOM",
    "STEP_VARIABLES",
    "StreamInUseError",
    "TransitReader",
    "TransitWriter",
    "WriteTiming",
    "read_manifest",
    "transit_folder",
    "writer_alive",
]

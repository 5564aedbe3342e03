"""The options of in situ and in transit visualisation: ``[insitu]`` and its
``[[insitu.pipeline]]`` entries, whose keys beyond the common ones are their kind's.

A pipeline kind (:func:`tachyflow.insitu.pipelines.register_pipeline`) names its options
class in ``Pipeline.options``: :class:`PipelineSection` or a subclass adding the kind's
keys (``slice``: ``plane`` and ``position``; a plug-in's kind: its own), so each entry is
read with its kind's keys only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from tachyflow.options import Check, at_least, requirement

Field = Literal["u", "v", "w", "p", "speed"]
# [insitu] transit_precision: the type of the values the in-transit stream carries.
TRANSIT_PRECISIONS = {"single": "float32", "double": "float64"}
# [insitu] transit_threads: where the stream's own threads (SST's) run when ranks are pinned.
TRANSIT_THREADS = ("spare-cores", "rank")
# Each registered pipeline kind's options class, filled by
# tachyflow.insitu.pipelines.register_pipeline (the case loader imports that module, and
# with it the plug-ins' kinds, before it reads pipeline entries).
KIND_OPTIONS: dict[str, type] = {}


@dataclass(frozen=True)
class PipelineSection:
    """``[[insitu.pipeline]]``: one visualisation made every ``every`` steps (or every
    ``every_time`` of simulated time), in situ (by the ranks) or in transit (by
    ``tachyflow transit-render``); the keys every kind has."""

    name: str = "pipeline"
    kind: str = "slice"
    field: Field = "u"
    colour_map: str = "viridis"
    range: tuple[float, float] = (0.0, 0.0)  # (0, 0): from the data
    every: Annotated[int, at_least(0)] = 0
    every_time: Annotated[float, at_least(0)] = 0.0
    mode: Literal["insitu", "transit"] = "insitu"

    @classmethod
    def entry_class(cls, entry: dict, source: str) -> type:
        """The options class of one entry: its kind's (ConfigError for an unknown kind)."""
        kind = entry.get("kind", cls.kind)
        requirement(source)(kind in KIND_OPTIONS, f"insitu.pipeline "
                            f"'{entry.get('name', cls.name)}' kind", f"one of "
                            f"{tuple(KIND_OPTIONS)}", kind)
        return KIND_OPTIONS[kind]

    def check(self, require) -> None:
        """Checks across the entry's values (a kind adds its own)."""
        key = f"insitu.pipeline '{self.name}'"
        require((self.every > 0) != (self.every_time > 0), f"{key} every",
                "either every (steps) or every_time (simulated time), not both",
                (self.every, self.every_time))
        low, high = self.range
        require(low < high or low == high == 0, f"{key} range", "(low, high) with low < high, "
                "or (0, 0) for the data's range", self.range)


@dataclass(frozen=True)
class SliceSection(PipelineSection):
    """A ``slice`` entry: ``field`` on the plane ``plane`` at ``position`` along its
    normal."""

    plane: Literal["xy", "xz", "yz"] = "xy"
    position: float = 0.0


@dataclass(frozen=True)
class IsosurfaceSection(PipelineSection):
    """An ``isosurface`` entry: ``field = value``, coloured by ``colour_by`` (default:
    ``field``)."""

    value: float = 0.0
    colour_by: Literal["", "u", "v", "w", "p", "speed"] = ""


@dataclass(frozen=True)
class ProbesSection(PipelineSection):
    """A ``probes`` entry: ``field`` at ``points``."""

    points: tuple[tuple[float, float, float], ...] = ()

    def check(self, require) -> None:
        super().check(require)
        require(bool(self.points), f"insitu.pipeline '{self.name}' points",
                "at least one probe point", self.points)


@dataclass(frozen=True)
class InsituSection:
    """``[insitu]``: visualisation pipelines and the in-transit stream's settings."""

    width: int = 800
    height: int = 600
    monitor: bool = False  # publish metrics and images for `tachyflow view`
    aggregators: Annotated[int, at_least(1)] = 1
    queue_limit: int = 4
    queue_full_policy: Literal["Block", "Discard"] = "Discard"
    reserve_queue_limit: Annotated[int, at_least(0)] = 2
    # Of the fields streamed in transit: single halves what the writer copies and sends
    # (pictures need no more); double carries the solver's values exactly.
    transit_precision: Literal[tuple(TRANSIT_PRECISIONS)] = "double"
    # With ranks pinned to cores (--pin-cores) and cores left: SST's threads (they send
    # each step to the readers) on those, or on the rank's own core.
    transit_threads: Literal[TRANSIT_THREADS] = "spare-cores"
    # (steps on, steps off): the pipelines are due only in the first `on` steps of every
    # `on + off`, and the run measures what they cost against the quiet steps (0, 0: always).
    duty_cycle: Annotated[tuple[int, int], Check(
        lambda c: c[0] >= 0 and c[1] >= 0 and (c[0] > 0) == (c[1] > 0),
        "[steps on, steps off], both > 0 (or both 0: always)")] = (0, 0)
    pipeline: tuple[PipelineSection, ...] = ()


def check_insitu(insitu: InsituSection, require) -> None:
    """Checks across ``[insitu]``'s values and its pipelines'."""
    require(insitu.width >= 16 and insitu.height >= 16, "insitu.width",
            "an image of at least 16 x 16 pixels", (insitu.width, insitu.height))
    require(insitu.queue_limit >= insitu.reserve_queue_limit + 2, "insitu.queue_limit",
            f"at least reserve_queue_limit + 2 = {insitu.reserve_queue_limit + 2} (SST stalls "
            "when the reserve fills the queue)", insitu.queue_limit)
    names = [pipeline.name for pipeline in insitu.pipeline]
    require(len(set(names)) == len(names), "insitu.pipeline", "pipelines with distinct names",
            names)
    for pipeline in insitu.pipeline:
        pipeline.check(require)

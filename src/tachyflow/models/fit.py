"""Reading ping-pong measurements for ``tachyflow model fit``.

Accepted inputs: a tachyflow results JSON whose entries carry ``size`` (bytes) and
``median`` (seconds, one-way) — ``tachyflow bench pingpong`` writes one; its latency
entries are used — or a text file of two numeric columns, message size in
bytes and one-way time (OSU ``osu_latency`` and NetPIPE-style output; ``#`` comments and
header lines are skipped), in microseconds unless told otherwise. A results JSON of
``tachyflow bench pingpong`` also carries the PRTT round trips of the LogGP fit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tachyflow.errors import ConfigError

TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def read_local_costs(path) -> dict:
    """The γ and δ a ping-pong results file measured (``{}`` for other inputs)."""
    path = Path(path)
    if path.suffix != ".json":
        return {}
    try:
        return dict(json.loads(path.read_text()).get("local_costs") or {})
    except (json.JSONDecodeError, OSError, AttributeError):
        return {}


def read_prtt(path) -> list[dict]:
    """The PRTT records of a ping-pong results file (``[]`` for other inputs, which have
    none: the LogGP fit needs round trips that a plain latency table does not give)."""
    path = Path(path)
    if path.suffix != ".json":
        return []
    try:
        records = json.loads(path.read_text()).get("prtt") or []
    except (json.JSONDecodeError, OSError, AttributeError):
        return []
    if not isinstance(records, list):
        raise ConfigError(
            f"{path}: 'prtt' must be a list of records, got {type(records).__name__}"
        )
    return records


# One-way ping-pong modes, the preferred one last: "cold" messages come from memory, as
# the data of collectives do in applications.
ONE_WAY = ("latency", "cold")


def read_measurements(path, time_unit: str = "us") -> tuple[np.ndarray, np.ndarray]:
    """Sizes (bytes) and one-way times (seconds) from a results JSON or a text table."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"measurement file {str(path)!r} does not exist")
    if time_unit not in TIME_UNITS:
        raise ConfigError(f"time unit must be one of {sorted(TIME_UNITS)}, got {time_unit!r}")
    text = path.read_text()
    if path.suffix == ".json":
        try:
            entries = [
                e
                for e in json.loads(text)["results"]
                if "size" in e and "median" in e and e.get("mode", "latency") in ONE_WAY
            ]
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ConfigError(f"{path} is not a results file with sizes: {error}") from None
        # One time per size: from memory ("cold") where measured, else the cached one.
        chosen = {}
        for entry in sorted(entries, key=lambda e: ONE_WAY.index(e.get("mode", "latency"))):
            chosen[entry["size"]] = entry
        entries = sorted(chosen.values(), key=lambda e: e["size"])
        return (
            np.array([e["size"] for e in entries], dtype=float),
            np.array([e["median"] for e in entries], dtype=float),
        )
    rows = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].replace(",", " ").split()
        try:
            size, seconds = float(fields[0]), float(fields[1]) * TIME_UNITS[time_unit]
        except (IndexError, ValueError):
            continue  # headers and blank lines
        rows.append((size, seconds))
    if not rows:
        raise ConfigError(f"{path}: no lines with a size and a time")
    sizes, times = np.array(rows).T
    return sizes, times


def exchange_factor(path, smallest: int = 65536) -> float:
    """How much longer a message takes while the same two ranks also send the other way:
    the median, over sizes from ``smallest`` bytes, of the bidirectional exchange time over
    the one-way time in a ``tachyflow bench pingpong`` results file, within [1, 2]; 1 when
    the file has no bidirectional measurements."""
    path = Path(path)
    try:
        results = json.loads(path.read_text()).get("results") or []
    except (OSError, ValueError, AttributeError):
        return 1.0
    times = {
        mode: {e["size"]: e["median"] for e in results if e.get("mode") == mode}
        for mode in ("latency", "bibw")
    }
    ratios = [
        times["bibw"][size] / one_way
        for size, one_way in times["latency"].items()
        if size >= smallest and size in times["bibw"] and one_way > 0
    ]
    return float(np.clip(np.median(ratios), 1.0, 2.0)) if ratios else 1.0

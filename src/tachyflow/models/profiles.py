"""Machine profiles: the cost model of a machine, built in (Hockney) or fitted by the user.

Built-in profiles are the seed papers' machines, so users can ask what-if questions:

- seed 003 (ping-pong fits, µs with m in bytes): IBM SP2 ``46 + 0.035 m``, Cray T3E
  ``18 + 0.006 m``, PC cluster ``176 + 0.105 m``;
- seed 001 (NetPIPE peak bandwidths: Fast Ethernet 90 Mb/s, Gigabit Ethernet 410 Mb/s,
  Myrinet 2000 640 Mb/s). The paper's latency figure is not machine-readable; the start-up
  times used (70, 45 and 9 µs, TCP for the Ethernets, GM for Myrinet) are typical values
  of that hardware and are marked as such in each profile's ``source``;
- ``shared-memory``: the default for ``algo="auto"`` when no fitted profile exists, of the
  order of an MPI library's intra-node transport (1 µs, 5 GB/s).

A fitted profile is a JSON file written by ``tachyflow model fit``; ``$TACHYFLOW_PROFILE``
names the one that ``algo="auto"`` uses. Its schema::

    {"model": {"model": "hockney", "alpha": s, "beta": s/B, "gamma", "delta", "sigma"},
     "quality": {...},
     "loggp": {"model": {"model": "loggp", "L": s, "o": s, "g": s, "G": s/B, ...},
               "quality": {...}},
     "default": "hockney" | "loggp",
     "source": "the measurements",
     "calibration": {"allreduce": {"2": {"ring": [[bytes, measured / predicted], ...],
                                          "native": [...], ...}}}}

``model`` is always the Hockney fit, so files written before LogGP existed still load;
``loggp`` is there when the measurements had PRTT data, and ``default`` (absent means
``hockney``) names the model :func:`load_profile` returns unless told otherwise.
``calibration`` (written by ``tachyflow model calibrate`` from ``tachyflow bench
collectives`` runs) holds, per operation, rank count and algorithm (``native`` too), how
much slower or faster it measured than the model predicts: ``algo="auto"`` scales its
predictions by it (:func:`calibration_factor`). The MPI library's collective is a black
box a ping-pong cannot fully describe, and every call also pays costs no message model
has (the Python call, the timing of a single call); a tuning run measures them, the model
interpolates between the sizes measured and carries the choice to other sizes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.models.hockney import Hockney
from tachyflow.models.loggp import LogGP

MICROSECOND = 1e-6
PROFILE_VARIABLE = "TACHYFLOW_PROFILE"
MODELS = ("hockney", "loggp")
# Parameters beyond the message model, with their defaults: local costs and the exchange
# factor (see Hockney).
LOCAL_COSTS = {"gamma": 0.0, "delta": 0.0, "sigma": 0.0, "exchange": 1.0}

_BUILTIN = {
    "sp2": (46.0, 0.035, "seed 003: IBM SP2 ping-pong fit, 46 + 0.035 m us"),
    "t3e": (18.0, 0.006, "seed 003: Cray T3E ping-pong fit, 18 + 0.006 m us"),
    "pc-cluster": (176.0, 0.105, "seed 003: PC cluster ping-pong fit, 176 + 0.105 m us"),
    "fast-ethernet": (70.0, 8.0 / 90.0, "seed 001: 90 Mb/s NetPIPE peak; 70 us typical"),
    "gigabit-ethernet": (45.0, 8.0 / 410.0, "seed 001: 410 Mb/s NetPIPE peak; 45 us typical"),
    "myrinet-2000": (9.0, 8.0 / 640.0, "seed 001: 640 Mb/s NetPIPE peak; 9 us typical"),
    "shared-memory": (1.0, 0.0002, "default: order of an intra-node MPI transport"),
}


def builtin_profiles() -> dict[str, Hockney]:
    """Every built-in profile by name (α in s, β in s/B)."""
    return {
        name: Hockney(alpha * MICROSECOND, beta * MICROSECOND, name)
        for name, (alpha, beta, _) in _BUILTIN.items()
    }


def profile_source(name: str) -> str:
    """Where a built-in profile's numbers come from."""
    return _BUILTIN[name][2]


def profile_document(
    hockney: Hockney,
    quality: dict,
    source: str,
    loggp: tuple[LogGP, dict] | None = None,
    default: str = "hockney",
) -> dict:
    """The JSON document of a fitted profile (schema in the module docstring).

    Raises
    ------
    ValueError
        ``default`` is not a model name, or is ``"loggp"`` without a LogGP fit.
    """
    if default not in MODELS:
        raise ValueError(f"default model must be one of {MODELS}, got {default!r}")
    if default == "loggp" and loggp is None:
        raise ValueError("the default model is loggp but there is no LogGP fit (no PRTT data)")
    document = {"model": hockney.to_dict(), "quality": quality}
    if loggp is not None:
        document["loggp"] = {"model": loggp[0].to_dict(), "quality": loggp[1]}
    document["default"] = default
    document["source"] = source
    return document


def load_profile(name_or_path: str | None = None, model: str | None = None) -> Hockney | LogGP:
    """A built-in profile by name, or a fitted one from a JSON file.

    ``None`` means ``$TACHYFLOW_PROFILE`` if set, else ``shared-memory``. ``model``
    (``"hockney"`` or ``"loggp"``) picks the model of a fitted profile; ``None`` takes the
    profile's ``default``. Built-in profiles are Hockney only.
    """
    if model is not None and model not in MODELS:
        raise ConfigError(f"model must be one of {MODELS}, got {model!r}")
    if name_or_path is None:
        name_or_path = os.environ.get(PROFILE_VARIABLE, "shared-memory")
    profiles = builtin_profiles()
    if name_or_path in profiles:
        if model == "loggp":
            raise ConfigError(
                f"built-in profile {name_or_path!r} has no LogGP model: fit one with "
                "`tachyflow model fit` from a `tachyflow bench pingpong` run"
            )
        return profiles[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise ConfigError(
            f"no profile {name_or_path!r}: built-in profiles are {', '.join(profiles)}, or "
            "give the JSON file written by `tachyflow model fit`"
        )
    try:
        document = json.loads(path.read_text())
        chosen = model or document.get("default", "hockney")
    except (json.JSONDecodeError, AttributeError) as error:
        raise ConfigError(f"{path} is not a tachyflow machine profile: {error}") from None
    if chosen not in MODELS:
        raise ConfigError(f"{path}: default model must be one of {MODELS}, got {chosen!r}")
    if chosen == "loggp" and "loggp" not in document:
        raise ConfigError(
            f"{path} has no LogGP model: it was fitted from measurements without PRTT data "
            "(rerun `tachyflow bench pingpong` and `tachyflow model fit`)"
        )
    try:
        if chosen == "hockney":
            parameters = document["model"]
            regimes = {
                key: float(parameters[key])
                for key in ("threshold", "alpha_large", "beta_large")
                if key in parameters
            }
            return Hockney(
                float(parameters["alpha"]),
                float(parameters["beta"]),
                str(parameters.get("name", path)),
                *(float(parameters.get(key, default)) for key, default in LOCAL_COSTS.items()),
                **regimes,
            )
        parameters = document["loggp"]["model"]
        return LogGP(
            *(float(parameters[key]) for key in ("L", "o", "g", "G")),
            str(parameters.get("name", path)),
            *(float(parameters.get(key, default)) for key, default in LOCAL_COSTS.items()),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigError(f"{path} is not a tachyflow machine profile: {error}") from None


def load_calibration(name_or_path: str | None = None) -> dict:
    """The ``calibration`` of a fitted profile (empty for built-in profiles)."""
    if name_or_path is None:
        name_or_path = os.environ.get(PROFILE_VARIABLE, "shared-memory")
    if name_or_path in builtin_profiles() or not Path(name_or_path).is_file():
        return {}
    try:
        return dict(json.loads(Path(name_or_path).read_text()).get("calibration") or {})
    except (json.JSONDecodeError, AttributeError, TypeError):
        return {}


def calibration_factor(
    calibration: dict, operation: str, ranks: int, algorithm: str, nbytes: float
) -> float:
    """Measured over predicted time of ``algorithm`` for ``operation`` on ``ranks`` ranks at
    ``nbytes``: interpolated in log size between calibrated sizes, the end values beyond
    them, 1 where nothing was calibrated."""
    points = calibration.get(operation, {}).get(str(ranks), {}).get(algorithm)
    if not points:
        return 1.0
    sizes, ratios = zip(*sorted(points), strict=True)
    return float(np.interp(np.log(max(nbytes, 1)), np.log(sizes), ratios))

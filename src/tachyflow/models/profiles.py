"""Machine profiles: the cost model of a machine, built in (Hockney) or fitted by the user.

Built-in profiles are the machines of the papers tachyflow draws on, so users can ask
what-if questions:

- Kim's 1998 Korea University report, "Design of communication functions for
  high-performance multicomputers" (ping-pong fits, µs with m in bytes): IBM SP2
  ``46 + 0.035 m``, Cray T3E ``18 + 0.006 m``, PC cluster ``176 + 0.105 m``;
- Lee, Hong, Lee and Lee, "Performance Analysis of Cluster Network Interfaces for
  Parallel Computing of Computational Fluid Dynamics" (NetPIPE peak bandwidths: Fast
  Ethernet 90 Mb/s, Gigabit Ethernet 410 Mb/s, Myrinet 2000 640 Mb/s). The paper's latency
  figure is not machine-readable; the start-up times used (70, 45 and 9 µs, TCP for the
  Ethernets, GM for Myrinet) are typical values of that hardware and are marked as such in
  each profile's ``source``;
- ``infiniband-qdr``: the network of Kwon, Park & Choi's Tachyon2 (InfiniBand 4x QDR) in
  "Optimization of Parallel Code for Noise Prediction in an Axial Fan Using MPI One-Sided
  Communication"; the paper gives no ping-pong figures, so 1.7 µs and 3.2 GB/s are typical
  values of that hardware, marked as such in its ``source``;
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

:func:`resolve_profile` turns any form of profile (a model object, a built-in name, a file,
``$TACHYFLOW_PROFILE``) into one :class:`MachineProfile`: the model, the calibration and a
key hashed from their content, by which the collectives cache what they derive from it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
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
    "sp2": (46.0, 0.035, "Kim 1998: IBM SP2 ping-pong fit, 46 + 0.035 m us"),
    "t3e": (18.0, 0.006, "Kim 1998: Cray T3E ping-pong fit, 18 + 0.006 m us"),
    "pc-cluster": (176.0, 0.105, "Kim 1998: PC cluster ping-pong fit, 176 + 0.105 m us"),
    "fast-ethernet": (70.0, 8.0 / 90.0, "Lee et al.: 90 Mb/s NetPIPE peak; 70 us typical"),
    "gigabit-ethernet": (45.0, 8.0 / 410.0, "Lee et al.: 410 Mb/s NetPIPE peak; 45 us typical"),
    "myrinet-2000": (9.0, 8.0 / 640.0, "Lee et al.: 640 Mb/s NetPIPE peak; 9 us typical"),
    "infiniband-qdr": (
        1.7,
        1.0 / 3200.0,
        "Kwon, Park & Choi's Tachyon2 (InfiniBand 4x QDR); 1.7 us and 3.2 GB/s typical",
    ),
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


@dataclass(frozen=True)
class MachineProfile:
    """A machine profile resolved once: its cost model, its calibration and a content key.

    ``key`` is a SHA-256 digest of the model's parameters (its kind included, its name
    left out) and of the calibration, so it names what the profile predicts, not where it
    came from: profiles of equal content share every cache keyed by it (the ``algo="auto"``
    choice, for one), and a profile file rewritten with other numbers gets a new key.
    Profiles compare and hash by ``key``. Build one with :func:`resolve_profile`, or
    directly from a model object.

    Parameters
    ----------
    model : Hockney or LogGP
        The cost model of a message.
    calibration : dict
        Measured over predicted times (schema in the module docstring; empty: none). The
        profile keeps its own copy; treat it as read-only.

    Raises
    ------
    TypeError
        ``model`` is not a Hockney or LogGP, or ``calibration`` is not a JSON-ready dict.
    """

    model: Hockney | LogGP = field(compare=False)
    calibration: dict = field(default_factory=dict, compare=False)
    key: str = field(init=False)

    def __post_init__(self):
        if not isinstance(self.model, Hockney | LogGP):
            raise TypeError(
                f"a machine profile's model must be a Hockney or LogGP, got "
                f"{type(self.model).__name__}"
            )
        if not isinstance(self.calibration, dict):
            raise TypeError(
                f"calibration must be a dict (operation -> ranks -> algorithm -> points), got "
                f"{type(self.calibration).__name__}"
            )
        parameters = {k: v for k, v in self.model.to_dict().items() if k != "name"}
        try:
            canonical = json.dumps(
                {"model": parameters, "calibration": self.calibration}, sort_keys=True
            )
        except TypeError as error:
            raise TypeError(f"calibration must hold only JSON values: {error}") from None
        object.__setattr__(self, "calibration", json.loads(canonical)["calibration"])
        object.__setattr__(self, "key", hashlib.sha256(canonical.encode()).hexdigest())

    @property
    def name(self) -> str:
        """The model's name (a built-in profile's name, or the fit's)."""
        return self.model.name


def resolve_profile(
    profile: MachineProfile | Hockney | LogGP | str | os.PathLike | None = None,
    model: str | None = None,
) -> MachineProfile:
    """A machine profile in any form given, resolved into one :class:`MachineProfile`.

    ``profile`` is a resolved profile (returned as it is), a model object (no calibration),
    a built-in profile name, a profile JSON file written by ``tachyflow model fit``, or
    ``None``: ``$TACHYFLOW_PROFILE`` if set, else ``shared-memory``. ``model``
    (``"hockney"`` or ``"loggp"``) picks the model of a fitted profile; ``None`` takes the
    profile's ``default``. Built-in profiles are Hockney only. Local (no MPI).

    A file is read on every call, so that a profile rewritten on disk is never answered
    from a stale copy; parsing is cached by the file's content. Resolve once and pass the
    result on where a hot loop would otherwise read the file each time.

    Raises
    ------
    ConfigError
        An unknown name, a file that is not a machine profile, or a model it lacks.
    TypeError
        ``profile`` is of none of these types.
    """
    if model is not None and model not in MODELS:
        raise ConfigError(f"model must be one of {MODELS}, got {model!r}")
    if isinstance(profile, MachineProfile | Hockney | LogGP):
        if model is not None:
            raise ConfigError(
                f"model={model!r} picks the model of a profile file or name, but the profile "
                f"given is already a {type(profile).__name__}"
            )
        return profile if isinstance(profile, MachineProfile) else MachineProfile(profile)
    if profile is None:
        profile = os.environ.get(PROFILE_VARIABLE, "shared-memory")
    if not isinstance(profile, str | os.PathLike):
        raise TypeError(
            "profile must be a MachineProfile, a Hockney or LogGP model, a built-in profile "
            f"name or a profile JSON path, got {type(profile).__name__}"
        )
    name_or_path = os.fspath(profile)
    if name_or_path in _BUILTIN:
        if model == "loggp":
            raise ConfigError(
                f"built-in profile {name_or_path!r} has no LogGP model: fit one with "
                "`tachyflow model fit` from a `tachyflow bench pingpong` run"
            )
        return _builtin(name_or_path)
    path = Path(name_or_path)
    try:
        content = path.read_bytes()
    except OSError:
        raise ConfigError(
            f"no profile {name_or_path!r}: built-in profiles are {', '.join(_BUILTIN)}, or "
            "give the JSON file written by `tachyflow model fit`"
        ) from None
    return _from_document(content, name_or_path, model)


@functools.cache
def _builtin(name: str) -> MachineProfile:
    return MachineProfile(builtin_profiles()[name])


@functools.lru_cache(maxsize=32)
def _from_document(content: bytes, path: str, model: str | None) -> MachineProfile:
    """The profile of a JSON file's ``content`` (``path`` names it in errors and is the
    model's name when the file gives none)."""
    try:
        document = json.loads(content)
        chosen = model or document.get("default", "hockney")
        calibration = document.get("calibration") or {}
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as error:
        raise ConfigError(f"{path} is not a tachyflow machine profile: {error}") from None
    if chosen not in MODELS:
        raise ConfigError(f"{path}: default model must be one of {MODELS}, got {chosen!r}")
    if chosen == "loggp" and "loggp" not in document:
        raise ConfigError(
            f"{path} has no LogGP model: it was fitted from measurements without PRTT data "
            "(rerun `tachyflow bench pingpong` and `tachyflow model fit`)"
        )
    if not isinstance(calibration, dict):
        raise ConfigError(
            f"{path}: calibration must be an object (operation -> ranks -> algorithm -> "
            f"points), got {type(calibration).__name__}"
        )
    try:
        if chosen == "hockney":
            parameters = document["model"]
            regimes = {
                key: float(parameters[key])
                for key in ("threshold", "alpha_large", "beta_large")
                if key in parameters
            }
            fitted = Hockney(
                float(parameters["alpha"]),
                float(parameters["beta"]),
                str(parameters.get("name", path)),
                *(float(parameters.get(key, default)) for key, default in LOCAL_COSTS.items()),
                **regimes,
            )
        else:
            parameters = document["loggp"]["model"]
            fitted = LogGP(
                *(float(parameters[key]) for key in ("L", "o", "g", "G")),
                str(parameters.get("name", path)),
                *(float(parameters.get(key, default)) for key, default in LOCAL_COSTS.items()),
            )
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigError(f"{path} is not a tachyflow machine profile: {error}") from None
    return MachineProfile(fitted, calibration)


def load_profile(name_or_path: str | None = None, model: str | None = None) -> Hockney | LogGP:
    """The model of a built-in profile by name, or of a fitted one from a JSON file.

    ``None`` means ``$TACHYFLOW_PROFILE`` if set, else ``shared-memory``; ``model`` as in
    :func:`resolve_profile`, which this reads the profile with.
    """
    return resolve_profile(name_or_path, model).model


def load_calibration(name_or_path: str | None = None) -> dict:
    """The ``calibration`` of a fitted profile (empty for built-in profiles), read with
    :func:`resolve_profile`."""
    return resolve_profile(name_or_path).calibration


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

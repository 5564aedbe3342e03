"""Communication cost models: Hockney (α, β) fitted from ping-pong, LogGP fitted from
Netgauge's PRTT round trips, and machine profiles."""

from tachyflow.models.hockney import Hockney, fit_hockney
from tachyflow.models.loggp import LogGP, fit_loggp
from tachyflow.models.profiles import (
    MachineProfile,
    builtin_profiles,
    load_profile,
    resolve_profile,
)

__all__ = [
    "Hockney",
    "LogGP",
    "MachineProfile",
    "builtin_profiles",
    "fit_hockney",
    "fit_loggp",
    "load_profile",
    "resolve_profile",
]

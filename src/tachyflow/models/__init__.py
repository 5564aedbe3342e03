"""Communication cost models: Hockney (α, β), fitted from ping-pong, and machine profiles."""

from tachyflow.models.hockney import Hockney, fit_hockney
from tachyflow.models.profiles import builtin_profiles, load_profile

__all__ = ["Hockney", "builtin_profiles", "fit_hockney", "load_profile"]

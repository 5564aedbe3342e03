"""Exceptions that tachyflow raises for problems a user can fix.

Each names the offending value and what was expected. Checks that raise them are decided
on values identical on every rank, so every rank raises together and no rank hangs.
"""


class TachyflowError(Exception):
    """Base class of tachyflow's own errors."""


class ConfigError(TachyflowError, ValueError):
    """A case file or command-line setting is missing, unknown or ill-typed."""


class DecompositionError(TachyflowError, ValueError):
    """A domain decomposition cannot be built as requested (grid, sizes, process counts)."""

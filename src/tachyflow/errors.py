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


class SimulationDiverged(TachyflowError, RuntimeError):
    """A run blew up: a field became non-finite or the CFL number passed its limit.

    Parameters
    ----------
    message : str
        What went wrong.
    step, time : int, float
        Step and simulated time of the last completed step.
    field : str
        Name of the offending field.
    """

    def __init__(self, message: str, *, step: int, time: float, field: str):
        super().__init__(f"{message} (step {step}, t = {time:g}, field {field!r})")
        self.message = message
        self.step = step
        self.time = time
        self.field = field

    def __reduce__(self):  # pickled to raise the same error on every rank
        return _rebuild, (type(self), self.message, self.__dict__)


class ConvergenceError(TachyflowError, RuntimeError):
    """An iterative solver stopped before reaching its tolerance.

    Parameters
    ----------
    message : str
        Why it stopped (iteration limit, breakdown).
    iterations : int
        Iterations made.
    residual : float
        Relative residual norm reached, ``‖b - Ax‖ / ‖b‖``.
    history : list of float
        Relative residual after every iteration.
    """

    def __init__(self, message: str, *, iterations: int, residual: float, history=()):
        super().__init__(f"{message} after {iterations} iterations (residual {residual:.3e})")
        self.message = message
        self.iterations = iterations
        self.residual = residual
        self.history = list(history)

    def __reduce__(self):  # pickled to raise the same error on every rank
        return _rebuild, (type(self), self.message, self.__dict__)


def _rebuild(cls, message: str, attributes: dict):
    """An error with keyword-only fields, rebuilt from its pickle."""
    keywords = {k: v for k, v in attributes.items() if k not in ("message", "agreed_rank")}
    error = cls(message, **keywords)
    error.__dict__.update(attributes)
    return error


class RunInterrupted(TachyflowError, RuntimeError):
    """A run stopped at the end of a step because the job was asked to stop (a signal).

    Parameters
    ----------
    signal_name : str
        The signal (``SIGINT``, ``SIGTERM``, ``SIGUSR1``).
    step : int
        The last completed step.
    checkpoint : str
        The checkpoint written before stopping ("" when none was).

    Attributes
    ----------
    exit_code : int
        128 plus the signal's number, as a shell reports a process a signal ended.
    """

    def __init__(self, signal_name: str, *, step: int, checkpoint: str = "", exit_code: int):
        then = (
            f"; checkpoint {checkpoint} written: continue with --restart latest"
            if checkpoint
            else ""
        )
        super().__init__(f"stopped by {signal_name} after step {step}{then}")
        self.message = signal_name
        self.step = step
        self.checkpoint = checkpoint
        self.exit_code = exit_code

    def __reduce__(self):  # pickled to raise the same error on every rank
        return _rebuild, (type(self), self.message, self.__dict__)

"""What the tests' child processes (tachyflow commands, launchers) start with."""

import os
import signal

# Variables an MPI launcher sets: the tests may run under one (the batched parallel
# variants), and a command started from a test must not believe it is one of its ranks.
LAUNCHER_VARIABLES = ("PMI_SIZE", "PMI_RANK", "PMI_FD", "PMI_PORT", "_PYTEST_MPI_CHILD_PROCESS")


def command_environment(**extra: str) -> dict[str, str]:
    """This process's environment with ``extra`` and without the launcher's variables."""
    environment = dict(os.environ, **extra)
    for name in LAUNCHER_VARIABLES:
        environment.pop(name, None)
    return environment


def interruptible() -> None:
    """``preexec_fn`` of a child that a test stops with SIGINT: Ctrl-C's default action back.

    A suite started in the background by a non-interactive shell (``make test &``) runs
    with SIGINT ignored; children inherit that, and Python then never raises
    KeyboardInterrupt.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)

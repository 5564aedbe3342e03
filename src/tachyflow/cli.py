"""The ``tachyflow`` command: the entry point that parses, launches and reports errors.

The commands themselves live in :mod:`tachyflow.commands`, one module each, registered by
name. Commands that run in parallel take ``-n N``: started without a launcher, tachyflow
runs itself again under ``mpiexec -n N``; started by mpiexec or srun, it just runs. Only
rank 0 prints. An uncaught exception on any rank ends the whole job with one line and a
non-zero exit code (2 for bad input, 1 otherwise); ``TACHYFLOW_TRACEBACK=1`` adds the
traceback.
"""

from __future__ import annotations

import os
import sys
import traceback

from tachyflow import runtime
from tachyflow.commands import build_parser
from tachyflow.errors import ConfigError, TachyflowError

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tachyflow`` command; returns the exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    runtime.defer_mpi_initialisation()  # building the parser must not start MPI
    try:
        parser = build_parser()
    except TachyflowError as error:  # a plug-in that cannot be imported
        print(f"tachyflow: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args = parser.parse_args(arguments)
    command = args.command_object
    ranks = getattr(args, "ranks", None)
    if getattr(args, "pin_cores", False):  # read by every rank as MPI starts
        os.environ[runtime.PIN_VARIABLE] = "core"
    threads = getattr(args, "threads", None)
    if threads is not None:  # read by every rank as it starts (numba: when imported)
        os.environ.update(runtime.thread_environment(threads))
        if ranks is None and threads > 1 and not runtime.under_launcher():
            ranks = 1  # numba has started here with one thread: a rank of its own
    try:
        runtime.check_pinning()
    except ConfigError as error:
        print(f"tachyflow: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ranks is not None and not runtime.under_launcher():
        try:
            code = command.orchestrate(args, arguments)  # commands that also launch peers
            nodes = getattr(args, "nodes", None)
            return runtime.relaunch(ranks, arguments, nodes=nodes) if code is None else code
        except TachyflowError as error:  # e.g. --nodes without an emulated cluster
            print(f"tachyflow: error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if "ranks" in vars(args) and getattr(args, "nodes", None) is not None and ranks is None:
        print("tachyflow: error: --nodes needs -n (the number of ranks)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if command.uses_mpi:
            size = runtime.initialise_mpi().Get_size()
            if ranks is not None and ranks not in (size, [size]):
                raise ConfigError(f"-n {ranks} was given but the launcher started {size} ranks")
        return command.run(args)
    except Exception as error:
        if os.environ.get("TACHYFLOW_TRACEBACK"):
            traceback.print_exc()
        code = EXIT_BAD_INPUT if isinstance(error, TachyflowError) else EXIT_FAILURE
        code = getattr(error, "exit_code", code)  # a stop signal: 128 + its number
        if not command.uses_mpi:  # MPI never started: nothing to abort
            print(f"tachyflow: error: {type(error).__name__}: {error}", file=sys.stderr)
            return code
        from tachyflow.parallel.agreement import agreed_rank

        return runtime.abort_on_exception(error, code, agreed_rank(error))

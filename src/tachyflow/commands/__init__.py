"""The commands of the ``tachyflow`` program, one module per command, registered by name.

A command is a subclass of :class:`Command` decorated with :func:`register`: it declares its
name (``"run"``, or ``"bench step"`` inside the group ``bench``), its help, its arguments
and ``run(args)``. Benchmarks subclass :class:`Benchmark` and also declare the results they
write (so ``tachyflow report`` can plot them) and their stages in ``tachyflow bench suite``.
Every module of this package is imported when the parser is built, and so are plug-ins
(:mod:`tachyflow.plugins`): adding a command is adding one file. Modules import only light
things at the top; the work, and MPI, are imported inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from dataclasses import dataclass
from typing import ClassVar

from tachyflow import __version__
from tachyflow.registry import Registry

EXIT_FAILURE = 1


@dataclass(frozen=True)
class SuitePlan:
    """What ``tachyflow bench suite`` asks each benchmark for: sizes and where to write."""

    ranks: tuple[int, ...]
    problem_class: str
    quick: bool
    output: str

    @property
    def most(self) -> str:
        """The largest rank count, as an argument."""
        return str(max(self.ranks))

    @property
    def grid(self) -> list[str]:
        """Cells per direction of the structured-grid stages."""
        return ["32"] * 3 if self.quick else ["128"] * 3

    @property
    def repeats(self) -> str:
        """Timed samples of the stages that take ``--repeats``."""
        return "3" if self.quick else "10"


class Command:
    """A ``tachyflow`` subcommand.

    Subclasses set ``name``, ``help`` and ``description``, add their arguments in
    :meth:`add_arguments` and do their work in :meth:`run`, which returns the exit code.
    A command with ``-n N`` (see :func:`tachyflow.commands.options.add_ranks`) is relaunched
    under mpiexec by the entry point; one that also starts jobs of its own (peers, stages)
    overrides :meth:`orchestrate`, which then runs in the launching process instead.
    A command whose ``uses_mpi`` is False runs without MPI being initialised.
    """

    name: ClassVar[str]
    help: ClassVar[str]
    description: ClassVar[str] = ""
    # False for commands that never need MPI (readers, viewers, offline tools): the entry
    # point then does not initialise it.
    uses_mpi: ClassVar[bool] = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare the command's arguments."""

    def run(self, args) -> int:
        """Do the work (inside the MPI job when the command has ``-n``); the exit code."""
        raise NotImplementedError(f"command {self.name!r} has no run()")

    def orchestrate(self, args, arguments: list[str]) -> int | None:
        """Launch the job (and peers) from outside MPI; None relaunches ``arguments``."""
        return None


class Benchmark(Command):
    """A ``tachyflow bench`` command that writes results files.

    ``results`` maps the ``benchmark`` key of each kind of results document the command
    writes to the module that names (``stem(document)``) and plots
    (``plot(document, png_path)``) it. ``suite_stages`` returns the command lines this
    benchmark adds to ``tachyflow bench suite`` (none by default), run in ``suite_order``.
    """

    results: ClassVar[dict[str, str]] = {}
    suite_order: ClassVar[int] = 100

    def suite_stages(self, plan: SuitePlan) -> list[tuple[str, list[str]]]:
        """``(label, arguments)`` of each suite stage of this benchmark."""
        return []


_COMMANDS = Registry("command", Command)
_GROUPS: dict[str, tuple[str, str]] = {}


def register(cls: type[Command]) -> type[Command]:
    """Class decorator: make ``cls`` a command (its ``name`` must be new)."""
    return _COMMANDS.add(cls)


def register_group(name: str, help: str, description: str = "") -> None:
    """Declare a group of commands (``tachyflow GROUP COMMAND``), such as ``bench``."""
    _GROUPS[name] = (help, description or help)


def load() -> dict[str, Command]:
    """Import every command module and plug-in once; the registered commands by name."""
    package = importlib.import_module(__name__)
    for module in pkgutil.walk_packages(package.__path__, prefix=f"{__name__}."):
        importlib.import_module(module.name)
    from tachyflow import plugins

    plugins.load()
    return {name: cls() for name, cls in _COMMANDS.classes().items()}


def benchmarks() -> dict[str, Benchmark]:
    """Registered benchmarks by command name."""
    return {name: c for name, c in load().items() if isinstance(c, Benchmark)}


def results_modules() -> dict[str, str]:
    """``benchmark`` key of a results document -> module that names and plots it."""
    found = {}
    for command in benchmarks().values():
        found.update(command.results)
    return found


def save_results(document: dict, folder):
    """Write a results document and its plot into ``folder``; both paths."""
    from tachyflow.bench.report import save

    module = importlib.import_module(results_modules()[document["benchmark"]])
    return save(document, folder, module)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tachyflow`` program, from the registry."""
    parser = argparse.ArgumentParser(
        prog="tachyflow",
        description="MPI-parallel CFD toolkit: solvers, communication benchmarks, reports.",
        epilog="Run 'tachyflow COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"tachyflow {__version__}")
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for name, command in sorted(load().items()):
        group, _, leaf = name.rpartition(" ")
        where = top
        if group:
            if group not in groups:
                help_text, description = _GROUPS.get(group, (f"{group} commands", ""))
                holder = top.add_parser(group, help=help_text, description=description)
                groups[group] = holder.add_subparsers(
                    dest=f"{group}_command", required=True, metavar="COMMAND"
                )
            where = groups[group]
        sub = where.add_parser(
            leaf, help=command.help, description=command.description or command.help
        )
        command.add_arguments(sub)
        sub.set_defaults(command_object=command)
    return parser

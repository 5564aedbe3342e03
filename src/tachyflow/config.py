"""Case files (TOML) parsed once into frozen, validated dataclasses.

A case has the sections every run shares — ``[case] [time] [output] [parallel]
[statistics] [acoustics] [insitu]`` — and the tables its solver owns, declared by the
solver (:class:`~tachyflow.solvers.base.SolverOptions`: ``[grid] [flow] [immersed]`` of the
pencil solvers, ``[compressible]``, a plug-in's ``[mysolver]``), plus ``[observers.NAME]``
tables of observers. Only those are read: any other table is refused, naming the ones the
case's solver reads. Every key is checked by :mod:`tachyflow.options`: an unknown key, a
value of the wrong type, a choice not offered or out of range raises
:class:`~tachyflow.errors.ConfigError` naming the key and the file. Built-in cases live in
``tachyflow/cases/*.toml``; ``tachyflow run NAME`` finds them by name.
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

from tachyflow.acoustics.options import AcousticsSection, check_acoustics
from tachyflow.errors import ConfigError
from tachyflow.insitu.options import InsituSection, check_insitu
from tachyflow.options import (
    Check,
    FilePath,
    at_least,
    check_values,
    requirement,
    table,
    table_lines,
    toml_value,
)

NonNegative = Annotated[int, at_least(0)]


@dataclass(frozen=True)
class CaseSection:
    """``[case]``: what the case is, and the registered solver that runs it."""

    name: str = "case"
    description: str = ""
    solver: str = "incompressible"


@dataclass(frozen=True)
class TimeSection:
    """``[time]``: how many steps and how long each is, and when a run may end sooner: once
    the statistics named in ``stop_when`` have settled (the ``settled`` observer)."""

    steps: Annotated[int, Check(lambda n: n >= 1, "a positive integer")] = 100
    dt: Annotated[float, Check(lambda dt: dt >= 0, ">= 0 (0: adaptive)")] = 0.0
    cfl: float = 0.5
    max_cfl: float = 2.0  # beyond this the run is declared diverged
    stop_when: tuple[str, ...] = ()  # columns of stats.csv that must settle, all of them
    stop_window: Annotated[int, at_least(4)] = 20  # statistics records they settle over
    stop_tolerance: Annotated[float, Check(lambda t: t > 0, "positive")] = 1e-4


@dataclass(frozen=True)
class OutputSection:
    """``[output]``: what is written how often (0: never, except at the end)."""

    statistics_every: NonNegative = 10
    checkpoint_every: NonNegative = 0
    checkpoints_kept: Annotated[int, at_least(1)] = 2  # the newest, once a new one is whole
    images_every: NonNegative = 0
    fields_every: NonNegative = 0
    vtk_fields: bool = True  # also VTK XML files + fields.pvd beside fields.bp
    monitor: bool = True  # each statistics record also a line on the run's output


@dataclass(frozen=True)
class StatisticsSection:
    """``[statistics]``: turbulence statistics (the ``turbulence`` observer); off while
    ``every`` is 0. Samples from ``start_step`` and ``start_time`` on, every ``every``
    steps, averaged over the ``homogeneous`` directions ("x" and "z" -- "theta" on a
    cylindrical grid --: profiles across the walls; none: mean and rms fields)."""

    every: NonNegative = 0
    start_step: NonNegative = 0
    start_time: Annotated[float, at_least(0)] = 0.0
    homogeneous: Annotated[tuple[str, ...], Check(
        lambda axes: sorted(axes) in ([], ["x", "z"], ["theta", "x"]),
        '["x", "z"] (or ["x", "theta"]: profiles across the walls) or [] (mean fields)',
    )] = ("x", "z")
    output_every: NonNegative = 0  # 0: only at the end
    # Profiles drawn and compared beside the run's: a built-in data set ("mkm-395") or a
    # CSV file (y_plus, u_plus[, uu_plus, vv_plus, ww_plus]; from the case's folder).
    reference: str = ""


@dataclass(frozen=True)
class ParallelSection:
    """``[parallel]``: the process grid (``[0, 0]``: chosen automatically) and where
    transposes overlap computation (non-blocking; the same results): ``"theta"``, the
    θ solves of a cylindrical grid, one velocity component travelling while another is
    solved; ``"poisson"``, the Poisson solve, in windows of planes. Measured on 2 shared
    cores (docs/benchmarks.md): the θ solves no slower, the Poisson solve slower, hence the
    default."""

    proc_grid: Annotated[tuple[int, int], Check(lambda p: p >= 0, "two integers >= 0",
                                                each=True)] = (0, 0)
    overlap: tuple[Literal["poisson", "theta"], ...] = ("theta",)


# The sections of every case, whatever its solver.
SHARED = {
    "case": CaseSection, "time": TimeSection, "output": OutputSection,
    "parallel": ParallelSection, "statistics": StatisticsSection,
    "acoustics": AcousticsSection, "insitu": InsituSection,
}


@dataclass(frozen=True)
class Config:
    """A whole case, resolved: the shared sections as attributes, the solver's tables
    (:attr:`tables`) read as attributes too (``config.grid``), ``[observers.NAME]`` tables
    in :attr:`observers`."""

    case: CaseSection = field(default_factory=CaseSection)
    time: TimeSection = field(default_factory=TimeSection)
    output: OutputSection = field(default_factory=OutputSection)
    parallel: ParallelSection = field(default_factory=ParallelSection)
    statistics: StatisticsSection = field(default_factory=StatisticsSection)
    acoustics: AcousticsSection = field(default_factory=AcousticsSection)
    insitu: InsituSection = field(default_factory=InsituSection)
    # The tables the solver owns, by name (its SolverOptions.tables, each filled in).
    tables: Mapping[str, object] = field(default_factory=dict)
    # [observers.NAME] tables: observers and their options (tachyflow.observers).
    observers: dict = field(default_factory=dict)
    source: str = field(default="", compare=False)

    def __getattr__(self, name: str):
        tables = self.__dict__.get("tables")
        if tables is not None and name in tables:
            return tables[name]
        solver = self.__dict__["case"].solver if "case" in self.__dict__ else "?"
        raise AttributeError(f"the case of solver {solver!r} has no section [{name}]")

    @property
    def provides(self) -> frozenset[str]:
        """The capabilities the case's solver offers for this case (observers need them)."""
        from tachyflow.solvers.base import solver_options

        return solver_options(self.case.solver).provides(self)

    def replace(self, section: str, **values) -> Config:
        """A copy with some values of one section changed (validated again)."""
        updated = dataclasses.replace(getattr(self, section), **values)
        if section in SHARED:
            result = dataclasses.replace(self, **{section: updated})
        else:
            result = dataclasses.replace(self, tables={**self.tables, section: updated})
        _validate(result, self.source)
        return result

    def to_toml(self, comments: bool = False) -> str:
        """The resolved configuration as TOML (written to a run's ``config.toml``); with
        ``comments``, each table's and key's meaning beside it (``tachyflow case show``)."""
        lines = []
        for name in SHARED:
            lines += table_lines(name, getattr(self, name), comments=comments)
        for name, values in self.tables.items():
            lines += table_lines(name, values, comments=comments)
        for name, options in self.observers.items():
            lines += [f"[observers.{name}]"]
            lines += [f"{key} = {toml_value(value)}" for key, value in options.items()]
            lines += [""]
        return "\n".join(lines)


def parse(text: str, source: str = "<string>", overrides: Sequence[str] = ()) -> Config:
    """Parse and validate a case file's text: the shared sections and the tables of its
    solver, with ``overrides`` (``"SECTION.KEY=VALUE"``, the value in TOML; a bare word is
    a string) set first, checked as if the file held them."""
    from tachyflow.solvers import base as solvers

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    for override in overrides:
        _override(document, override, source)
    case = table(CaseSection, document.get("case", {}), "case", source)
    requirement(source)(case.solver in solvers.names(), "case.solver",
                        f"one of {solvers.names()}", case.solver)
    owned = solvers.solver_options(case.solver).tables
    for name in document:
        if name not in SHARED and name not in owned and name != "observers":
            raise ConfigError(
                f"{source}: unknown section [{name}] (solver {case.solver!r} reads "
                f"{', '.join(f'[{known}]' for known in [*SHARED, *owned])} and "
                "[observers.NAME])"
            )
    if isinstance(document.get("insitu"), dict) and document["insitu"].get("pipeline"):
        from tachyflow.insitu.pipelines import kinds

        kinds()  # the registered kinds and their options: built-ins' and plug-ins'
    observers = document.get("observers", {})
    if not all(isinstance(entry, dict) for entry in observers.values()):
        raise ConfigError(f"{source}: [observers] holds only tables [observers.NAME]")
    sections = {name: table(cls, document.get(name, {}), name, source)
                for name, cls in SHARED.items() if name != "case"}
    tables = {name: table(cls, document.get(name, {}), name, source)
              for name, cls in owned.items()}
    config = Config(case=case, **sections, tables=tables, observers=observers, source=source)
    _validate(config, source)
    return config


def _override(document: dict, override: str, source: str) -> None:
    """Set ``SECTION.KEY=VALUE`` in a case's TOML document."""
    key, equals, text = override.partition("=")
    section, dot, name = key.strip().rpartition(".")
    if not equals or not dot or not section or not name:
        raise ConfigError(f"{source}: --set {override!r} must be SECTION.KEY=VALUE")
    try:
        value = tomllib.loads(f"value = {text.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = text.strip()  # a bare word: a string, as a shell user types it
    tables = document
    for part in section.split("."):
        tables = tables.setdefault(part, {})
        if not isinstance(tables, dict):
            raise ConfigError(f"{source}: --set {override!r}: [{section}] is not a table")
    tables[name] = value


def _validate(config: Config, source: str) -> None:
    """The checks across values: the shared sections', then the solver's own."""
    from tachyflow.solvers.base import solver_options

    require = requirement(source)
    for name in SHARED:
        check_values(getattr(config, name), name, source)
    for name, values in config.tables.items():
        check_values(values, name, source)
    time = config.time
    require(0 < time.cfl <= time.max_cfl, "time.cfl", f"in (0, max_cfl = {time.max_cfl}]",
            time.cfl)
    check_acoustics(config.acoustics, time.dt, require)
    check_insitu(config.insitu, require)
    check = solver_options(config.case.solver).check
    if check is not None:
        check(config, require)


def _with_paths_from(config: Config, folder: Path) -> Config:
    """``config`` with the relative file paths of its solver's tables (fields annotated
    ``FilePath``) taken from ``folder`` (the case file's)."""
    for name, values in config.tables.items():
        hints = typing.get_type_hints(type(values), include_extras=True)
        paths = {
            key: str((folder / getattr(values, key)).absolute())
            for key, hint in hints.items()
            if any(isinstance(mark, FilePath) for mark in getattr(hint, "__metadata__", ()))
            and getattr(values, key) and not Path(getattr(values, key)).is_absolute()
        }
        if paths:
            config = config.replace(name, **paths)
    return config


def builtin_cases() -> list[str]:
    """Names of the cases shipped with tachyflow."""
    folder = resources.files("tachyflow") / "cases"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load(name_or_path: str, overrides: Sequence[str] = ()) -> Config:
    """Load a built-in case by name, or a case file by path, with ``overrides``
    (:func:`parse`)."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if path.is_dir():
            raise ConfigError(f"case file {str(path)!r} is a folder, not a TOML file")
        if not path.is_file():
            raise ConfigError(f"case file {str(path)!r} does not exist")
        return _with_paths_from(parse(path.read_text(), str(path), overrides), path.parent)
    resource = resources.files("tachyflow") / "cases" / f"{name_or_path}.toml"
    if not resource.is_file():
        raise ConfigError(
            f"no case named {name_or_path!r}: built-in cases are "
            f"{', '.join(builtin_cases())}, or give a path to a .toml file"
        )
    return parse(resource.read_text(), f"{name_or_path} (built-in)", overrides)

"""Case files (TOML) parsed once into frozen, validated dataclasses.

Every key is checked: an unknown key, a value of the wrong type or out of range raises
:class:`~tachyflow.errors.ConfigError` naming the key and the file. Built-in cases live in
``tachyflow/cases/*.toml``; ``tachyflow run NAME`` finds them by name.
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from tachyflow.errors import ConfigError

INITIAL_CONDITIONS = ("rest", "taylor-green", "poiseuille", "perturbed-channel")
FORCINGS = ("none", "pressure-gradient", "flow-rate")


@dataclass(frozen=True)
class CaseSection:
    """``[case]``: what the case is."""

    name: str = "case"
    description: str = ""


@dataclass(frozen=True)
class GridSection:
    """``[grid]``: cells, domain size, walls and their clustering."""

    cells: tuple[int, int, int] = (32, 32, 32)
    lengths: tuple[float, float, float] = (6.283185307179586,) * 3
    walls: bool = False
    stretching: float = 0.0


@dataclass(frozen=True)
class FlowSection:
    """``[flow]``: fluid, forcing and initial condition."""

    viscosity: float = 1e-2
    forcing: str = "none"
    forcing_value: float = 0.0
    initial: str = "rest"
    perturbation: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class TimeSection:
    """``[time]``: how many steps and how long each is."""

    steps: int = 100
    dt: float = 0.0  # 0: adaptive from cfl
    cfl: float = 0.5
    max_cfl: float = 2.0  # beyond this the run is declared diverged


@dataclass(frozen=True)
class OutputSection:
    """``[output]``: what is written how often (0: never, except at the end)."""

    statistics_every: int = 10
    checkpoint_every: int = 0
    images_every: int = 0
    fields_every: int = 0


@dataclass(frozen=True)
class ParallelSection:
    """``[parallel]``: the process grid (``[0, 0]``: chosen automatically)."""

    proc_grid: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Config:
    """A whole case, resolved."""

    case: CaseSection = field(default_factory=CaseSection)
    grid: GridSection = field(default_factory=GridSection)
    flow: FlowSection = field(default_factory=FlowSection)
    time: TimeSection = field(default_factory=TimeSection)
    output: OutputSection = field(default_factory=OutputSection)
    parallel: ParallelSection = field(default_factory=ParallelSection)
    source: str = field(default="", compare=False)

    def replace(self, section: str, **values) -> Config:
        """A copy with some values of one section changed (validated again)."""
        updated = dataclasses.replace(getattr(self, section), **values)
        result = dataclasses.replace(self, **{section: updated})
        _validate(result, self.source)
        return result

    def to_toml(self) -> str:
        """The resolved configuration as TOML (written to a run's ``config.toml``)."""
        lines = []
        for section in dataclasses.fields(self):
            if section.name == "source":
                continue
            lines.append(f"[{section.name}]")
            for item in dataclasses.fields(getattr(self, section.name)):
                value = getattr(getattr(self, section.name), item.name)
                lines.append(f"{item.name} = {_toml_value(value)}")
            lines.append("")
        return "\n".join(lines)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def _convert(value, annotation, key: str, source: str):
    """Check ``value`` against a field type; ints are accepted where floats are expected."""
    if typing.get_origin(annotation) is tuple:
        item_types = typing.get_args(annotation)
        if not isinstance(value, list) or len(value) != len(item_types):
            raise ConfigError(
                f"{source}: '{key}' must be a list of {len(item_types)} values, got {value!r}"
            )
        return tuple(_convert(v, t, key, source) for v, t in zip(value, item_types, strict=True))
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, annotation) or (annotation is not bool and isinstance(value, bool)):
        raise ConfigError(f"{source}: '{key}' must be {annotation.__name__}, got {value!r}")
    return value


def _section(cls, table, name: str, source: str):
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [{name}] must be a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key in table:
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key '{name}.{key}' (known: {', '.join(sorted(known))})"
            )
    values = {
        key: _convert(value, hints[key], f"{name}.{key}", source) for key, value in table.items()
    }
    return cls(**values)


def parse(text: str, source: str = "<string>") -> Config:
    """Parse and validate a case file's text."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    hints = typing.get_type_hints(Config)
    sections = {f.name for f in dataclasses.fields(Config)} - {"source"}
    for name in document:
        if name not in sections:
            raise ConfigError(
                f"{source}: unknown section [{name}] (known: {', '.join(sorted(sections))})"
            )
    config = Config(
        **{name: _section(hints[name], document.get(name, {}), name, source) for name in sections},
        source=source,
    )
    _validate(config, source)
    return config


def _validate(config: Config, source: str) -> None:
    def require(condition: bool, key: str, expectation: str, value) -> None:
        if not condition:
            raise ConfigError(f"{source}: '{key}' must be {expectation}, got {value!r}")

    grid, flow, time, output = config.grid, config.flow, config.time, config.output
    require(all(n >= 1 for n in grid.cells), "grid.cells", "3 positive integers", grid.cells)
    require(
        all(length > 0 for length in grid.lengths),
        "grid.lengths",
        "3 positive lengths",
        grid.lengths,
    )
    require(grid.stretching >= 0, "grid.stretching", ">= 0", grid.stretching)
    require(
        grid.walls or grid.stretching == 0,
        "grid.stretching",
        "0 without walls (a periodic y is uniform)",
        grid.stretching,
    )
    require(
        not grid.walls or grid.cells[1] >= 2,
        "grid.cells",
        "at least 2 cells in y with walls",
        grid.cells,
    )
    require(flow.viscosity > 0, "flow.viscosity", "positive", flow.viscosity)
    require(flow.forcing in FORCINGS, "flow.forcing", f"one of {FORCINGS}", flow.forcing)
    require(
        flow.initial in INITIAL_CONDITIONS,
        "flow.initial",
        f"one of {INITIAL_CONDITIONS}",
        flow.initial,
    )
    require(flow.perturbation >= 0, "flow.perturbation", ">= 0", flow.perturbation)
    require(time.steps >= 1, "time.steps", "a positive integer", time.steps)
    require(time.dt >= 0, "time.dt", ">= 0 (0: adaptive)", time.dt)
    require(
        0 < time.cfl <= time.max_cfl, "time.cfl", f"in (0, max_cfl = {time.max_cfl}]", time.cfl
    )
    for key in ("statistics_every", "checkpoint_every", "images_every", "fields_every"):
        value = getattr(output, key)
        require(value >= 0, f"output.{key}", ">= 0", value)
    require(
        all(p >= 0 for p in config.parallel.proc_grid),
        "parallel.proc_grid",
        "two integers >= 0",
        config.parallel.proc_grid,
    )


def builtin_cases() -> list[str]:
    """Names of the cases shipped with tachyflow."""
    folder = resources.files("tachyflow") / "cases"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load(name_or_path: str) -> Config:
    """Load a built-in case by name, or a case file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ConfigError(f"case file {str(path)!r} does not exist")
        return parse(path.read_text(), str(path))
    resource = resources.files("tachyflow") / "cases" / f"{name_or_path}.toml"
    if not resource.is_file():
        raise ConfigError(
            f"no case named {name_or_path!r}: built-in cases are "
            f"{', '.join(builtin_cases())}, or give a path to a .toml file"
        )
    return parse(resource.read_text(), f"{name_or_path} (built-in)")

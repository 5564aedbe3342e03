"""Options of case tables: TOML tables converted strictly into frozen dataclasses.

Every owner of options — the case's shared sections (:mod:`tachyflow.config`), each solver,
each visualisation pipeline kind, a plug-in's — declares them as a frozen dataclass whose
field types say what a value may be: ``int``, ``float``, ``bool``, ``str``, tuples of
them, nested option dataclasses, ``Literal[...]`` for a choice, and
``Annotated[T, Check(...)]`` for a range. :func:`table` converts a TOML table into such a
dataclass and raises :class:`~tachyflow.errors.ConfigError` naming the key and the file for
an unknown key, a value of the wrong type, a choice not offered or a value out of range.
Checks that relate several values are the owner's (a ``require`` callback, see
:func:`requirement`).

This module is MPI-free and imports nothing of tachyflow but its errors: reading a case
file never imports a solver's kernels.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from tachyflow.errors import ConfigError

__all__ = [
    "Check", "FilePath", "at_least", "check_values", "finite", "inside", "positive",
    "requirement", "table", "table_lines", "toml_value",
]


@dataclass(frozen=True)
class Check:
    """A condition on one value (each item of a tuple when ``each``): ``Annotated[float,
    Check(lambda v: v > 0, "positive")]``; ``expectation`` completes "must be ..."."""

    test: Callable[[typing.Any], bool]
    expectation: str
    each: bool = False

    def holds(self, value) -> bool:
        """Whether ``value`` passes (every item, for a check on each)."""
        return all(map(self.test, value)) if self.each else bool(self.test(value))


class FilePath:
    """``Annotated[str, FilePath()]``: a file's path, taken from the case file's folder when
    relative (:func:`tachyflow.config.load`)."""


positive = Check(lambda value: value > 0, "positive")
finite = Check(math.isfinite, "a finite number")


def at_least(low, each: bool = False) -> Check:
    """Values ``>= low``."""
    return Check(lambda value: value >= low, f">= {low}", each)


def inside(low, high, closed: str = "()", each: bool = False) -> Check:
    """Values between ``low`` and ``high``; ``closed`` is the interval's brackets."""
    above = (lambda v: v >= low) if closed[0] == "[" else (lambda v: v > low)
    below = (lambda v: v <= high) if closed[1] == "]" else (lambda v: v < high)
    return Check(lambda v: above(v) and below(v), f"in {closed[0]}{low}, {high}{closed[1]}", each)


def requirement(source: str) -> Callable:
    """``require(condition, key, expectation, value)``: raises the one-line ConfigError of
    a failed check across values, naming the file and the key."""

    def require(condition: bool, key: str, expectation: str, value) -> None:
        if not condition:
            raise ConfigError(f"{source}: '{key}' must be {expectation}, got {value!r}")

    return require


def _choose(value, choices: tuple, key: str, source: str):
    """``value`` if it is one of a ``Literal``'s ``choices`` (of the same type), else the
    ConfigError naming them."""
    if value not in choices or type(value) not in {type(choice) for choice in choices}:
        raise ConfigError(f"{source}: '{key}' must be one of {choices}, got {value!r}")
    return value


def _convert(value, annotation, key: str, source: str):
    """``value`` converted to a field's type (its ranges are :func:`check_values`'); ints
    are accepted where floats are expected."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _convert(value, arguments[0], key, source)
    if origin is Literal:
        return _choose(value, arguments, key, source)
    if dataclasses.is_dataclass(annotation):
        return table(annotation, value, key, source)
    if origin is tuple and arguments[-1] is Ellipsis:
        if not isinstance(value, list):
            raise ConfigError(f"{source}: '{key}' must be a list, got {value!r}")
        return tuple(_convert(item, arguments[0], key, source) for item in value)
    if origin is tuple:
        if not isinstance(value, list) or len(value) != len(arguments):
            raise ConfigError(
                f"{source}: '{key}' must be a list of {len(arguments)} values, got {value!r}"
            )
        return tuple(_convert(v, t, key, source) for v, t in zip(value, arguments, strict=True))
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is float and isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{source}: '{key}' must be a finite number, got {value!r}")
    if not isinstance(value, annotation) or (annotation is not bool and isinstance(value, bool)):
        raise ConfigError(f"{source}: '{key}' must be {annotation.__name__}, got {value!r}")
    return value


def table(cls, values, name: str, source: str):
    """``cls`` from a TOML table, strictly (unknown keys, wrong types, choices not offered);
    ``name`` ("" at the top of a file) prefixes keys. The ranges of ``Annotated`` fields
    are checked by :func:`check_values` once the whole case is read.

    A nested dataclass may pick the class of each entry of a list of tables from a key of
    the entry: ``cls.entry_class(entry: dict, source) -> type`` (pipelines by ``kind``).
    """
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: [{name}] must be a table")
    hints = typing.get_type_hints(cls, include_extras=True)
    known = {f.name for f in dataclasses.fields(cls)}
    qualified = {key: f"{name}.{key}" if name else key for key in values}
    for key in values:
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key '{qualified[key]}' (known: {', '.join(sorted(known))})"
            )
    converted = {}
    for key, value in values.items():
        entry = _entry_type(hints[key])
        if entry is not None and hasattr(entry, "entry_class") and isinstance(value, list):
            converted[key] = tuple(
                table(entry.entry_class(item, source), item, qualified[key], source)
                for item in value
            )
        else:
            converted[key] = _convert(value, hints[key], qualified[key], source)
    return cls(**converted)


def check_values(values, name: str, source: str) -> None:
    """Check a table's choices and ranges (``Literal`` and ``Annotated`` fields), nested
    tables included: after :func:`table`, and for one changed in code
    (``dataclasses.replace``)."""
    hints = typing.get_type_hints(type(values), include_extras=True)
    for item in dataclasses.fields(values):
        value, key = getattr(values, item.name), f"{name}.{item.name}" if name else item.name
        if dataclasses.is_dataclass(value):
            check_values(value, key, source)
        elif _entry_type(hints[item.name]) is not None:
            for entry in value:
                check_values(entry, key, source)
        else:
            _check(value, hints[item.name], key, source)


def _check(value, annotation, key: str, source: str) -> None:
    """The choices and ranges of ``annotation`` on a converted ``value``."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        _check(value, arguments[0], key, source)
        for check in arguments[1:]:
            if isinstance(check, Check):
                requirement(source)(check.holds(value), key, check.expectation, value)
    elif origin is Literal:
        _choose(value, arguments, key, source)
    elif origin is tuple and arguments[-1:] == (Ellipsis,):
        for entry in value:
            _check(entry, arguments[0], key, source)


def _entry_type(annotation):
    """The dataclass of a ``tuple[Dataclass, ...]`` field, else None."""
    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and arguments[-1:] == (Ellipsis,):
        return arguments[0] if dataclasses.is_dataclass(arguments[0]) else None
    return None


def table_lines(name: str, values, header: str = "[{}]", comments: bool = False) -> list[str]:
    """TOML lines of one table; tuples of tables become ``[[name.key]]`` arrays. With
    ``comments``, the table's first docstring line above it and what each key may be
    beside it."""
    lines, nested = [header.format(name)], []
    if comments and type(values).__doc__:
        summary = " ".join(type(values).__doc__.split("\n\n")[0].split()).replace("``", "")
        lines[:0] = textwrap.wrap(summary, 88, initial_indent="# ", subsequent_indent="# ")
    hints = typing.get_type_hints(type(values), include_extras=True)
    for item in dataclasses.fields(values):
        value = getattr(values, item.name)
        if value and isinstance(value, tuple) and dataclasses.is_dataclass(value[0]):
            for entry in value:
                nested += table_lines(f"{name}.{item.name}", entry, "[[{}]]", comments)
        elif comments:
            lines.append(f"{item.name} = {toml_value(value)}  # {describe(hints[item.name])}")
        else:
            lines.append(f"{item.name} = {toml_value(value)}")
    return [*lines, "", *nested]


def describe(annotation) -> str:
    """What a value of a field of type ``annotation`` may be, in words."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        checks = [mark.expectation for mark in arguments[1:] if isinstance(mark, Check)]
        paths = ["a path, from the case file's folder when relative"
                 for mark in arguments[1:] if isinstance(mark, FilePath)]
        return ", ".join([describe(arguments[0]), *checks, *paths])
    if origin is Literal:
        return "one of " + ", ".join(toml_value(choice) for choice in arguments)
    if origin is tuple and arguments[-1:] == (Ellipsis,):
        item = arguments[0]
        return "a list of tables" if dataclasses.is_dataclass(item) else (
            f"a list, each {describe(item)}")
    if origin is tuple:
        return f"a list of {len(arguments)}: {', '.join(describe(a) for a in arguments)}"
    return {int: "integer", float: "number", bool: "true or false", str: "string"}.get(
        annotation, getattr(annotation, "__name__", str(annotation)))


def toml_value(value) -> str:
    """``value`` written as TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)

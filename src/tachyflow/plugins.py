"""Plug-ins: a user's own commands, observers, solvers and visualisation pipeline kinds,
registered from outside tachyflow.

A plug-in is a Python module that registers things when imported, with
:func:`tachyflow.commands.register`, :func:`tachyflow.observers.register`,
:func:`tachyflow.solvers.register` or :func:`tachyflow.insitu.pipelines.register_pipeline`.
tachyflow imports, once per process:

- every module named in ``$TACHYFLOW_PLUGINS`` (comma-separated module names, importable
  from ``sys.path``/``PYTHONPATH``), and
- every entry point of the group ``tachyflow.plugins`` of an installed package
  (``[project.entry-points."tachyflow.plugins"] name = "package.module"``).

Under mpiexec every rank imports the same plug-ins, so registrations agree across ranks.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points

from tachyflow.errors import ConfigError

VARIABLE = "TACHYFLOW_PLUGINS"
GROUP = "tachyflow.plugins"

_loaded: set[str] = set()


def load() -> None:
    """Import the plug-ins not imported yet (idempotent)."""
    names = [name.strip() for name in os.environ.get(VARIABLE, "").split(",") if name.strip()]
    for name in names:
        if name in _loaded:
            continue
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise ConfigError(f"${VARIABLE}: cannot import plug-in {name!r}: {error}") from None
        _loaded.add(name)
    for point in entry_points(group=GROUP):
        if point.value not in _loaded:
            point.load()
            _loaded.add(point.value)

"""Each owner owns its options: no solver or body-shape name decides anything in the case
loader, the observers or the commands, and each solver's case reads only its tables."""

import ast
from pathlib import Path

import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.solvers import base as solvers
from tachyflow.solvers.pencil import bodies

SOURCE = Path(config.__file__).parent
# Where a solver's or a shape's name must not be compared against: they ask capabilities.
GENERIC = [SOURCE / "config.py", *sorted((SOURCE / "observers").glob("*.py")),
           *sorted((SOURCE / "commands").glob("*.py"))]


def named_comparisons(path: Path, names: set[str]) -> list[str]:
    """``line: name`` of each comparison (``==``, ``!=``, ``in``) with a string in
    ``names`` in the file at ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                values = operand.elts if isinstance(operand, ast.Tuple | ast.List) else [operand]
                found += [f"{path.name}:{node.lineno}: {value.value!r}" for value in values
                          if isinstance(value, ast.Constant) and value.value in names]
    return found


def test_no_solver_or_shape_name_is_compared_in_config_observers_or_commands():
    names = set(solvers.names()) | set(bodies.shapes())
    assert {"incompressible", "cylindrical", "compressible", "fan-rotor", "cylinder"} <= names
    found = [hit for path in GENERIC for hit in named_comparisons(path, names)]
    assert found == []


def test_the_check_finds_a_comparison_with_a_solver_name(tmp_path):
    module = tmp_path / "observer.py"
    module.write_text('def on(config):\n    return config.case.solver in ("cylindrical",)\n')
    assert named_comparisons(module, {"cylindrical"}) == ["observer.py:2: 'cylindrical'"]


@pytest.mark.parametrize(
    ("text", "message"),
    [  # an initial condition of the other pencil solver
        ('[flow]\ninitial = "couette"\n', r"'flow\.initial' must be one of \('rest', 'taylor"),
        ('[case]\nsolver = "cylindrical"\n[flow]\ninitial = "taylor-green"\n',
         r"'flow\.initial' must be one of \('rest', 'hagen-poiseuille'"),
        # a table of another solver
        ("[cylinder]\nradius = 2.0\n", r"unknown section \[cylinder\] \(solver 'incompressible'"),
        ('[case]\nsolver = "compressible"\n[grid]\ncells = [8, 8, 8]\n',
         r"unknown section \[grid\] \(solver 'compressible' reads .*\[compressible\]"),
        ("[compressible]\nmach = 0.5\n", r"unknown section \[compressible\]"),
        # a capability the solver lacks for the case
        ('[case]\nsolver = "compressible"\n[statistics]\nevery = 1\n',
         r"\[statistics\] needs pencil-fields, which solver 'compressible'"),
    ],
)
def test_each_solver_reads_only_its_tables_and_choices(text, message):
    from tachyflow import observers

    with pytest.raises(ConfigError, match=message):
        observers.build(config.parse(text, "case.toml"))


def test_capabilities_follow_the_case():
    assert {"rotor", "immersed-bodies"} <= config.load("axial-fan").provides
    assert "rotor" not in config.load("sphere").provides
    assert "cartesian-grid" in config.load("cylinder-re40").provides
    assert config.load("pressure-box").provides == {"mesh-solution"}
    channel = config.load("channel")
    with pytest.raises(AttributeError, match=r"solver 'incompressible' has no section \[fan\]"):
        channel.fan  # noqa: B018

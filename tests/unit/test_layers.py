"""The package's import graph keeps the rule table of :mod:`tachyflow.layers`.

Every module of ``src/tachyflow`` is read with :mod:`ast`, without importing it. An import
is a dependency wherever it stands: at module level, inside a function (a lazy import) or
under ``if TYPE_CHECKING:`` (it still ties the two modules together); relative imports are
resolved, and ``from package import name`` is the module ``package.name`` where that is
one. Imports by a computed name (``importlib.import_module``) are not seen.

The checks: no circle between rooms, nor between modules (a circle of modules makes the
import order decide which of them sees the other half made, even inside one room); no
import of a room above, or of one on the same row unless the table allows it; ``mpi4py``
only where the table allows it; the drivers send nothing on a communicator themselves;
the rooms of the table are those of the tree; and the drawing in ``docs/architecture.md``
is the one the table renders.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tachyflow import layers

PACKAGE = Path(layers.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


# Names that hold a communicator in the drivers: comm, self.comm, world_comm, COMM_WORLD.
COMMUNICATOR = re.compile(r"^(comm|communicator|\w+_comm|comm_\w+|COMM_\w+)$")


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of the package in ``root``: dotted name -> (file, is a package)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def room(module: str) -> str:
    """The room of a dotted module name: its second part (``__init__``: the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(module: str, path: Path, package: bool, known) -> list[tuple[str, int]]:
    """What ``module`` imports, anywhere in it: (dotted name, line). A name of the package
    is the nearest module of ``known`` it names; others are kept as written."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = module.split(".")[: None if package else -1]
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                inner = f"{source}.{alias.name}"
                found.append((inner if inner in known else source, node.lineno))
    top = module.split(".")[0]
    resolved = []
    for name, line in found:
        if name.split(".")[0] == top:
            while name not in known and "." in name:
                name = name.rsplit(".", 1)[0]
        resolved.append((name, line))
    return resolved


def communicator_calls(path: Path) -> list[tuple[str, int]]:
    """Calls of a communicator's methods other than its questions: (``comm.gather``, line)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        holder = node.func.value
        name = getattr(holder, "id", None) or getattr(holder, "attr", None)
        method = node.func.attr
        if name and COMMUNICATOR.match(name) and method not in layers.COMMUNICATOR_QUESTIONS:
            found.append((f"{name}.{method}", node.lineno))
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of ``graph`` with more than one node (Tarjan)."""
    order, low, stack, on_stack, parts = {}, {}, [], set(), []

    def visit(node):
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            part = []
            while not part or part[-1] != node:
                part.append(stack.pop())
                on_stack.discard(part[-1])
            if len(part) > 1:
                parts.append(sorted(part))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return parts


def violations(root: Path) -> dict[str, list[str]]:
    """The import rules broken by the package in ``root``: each finding with where (file
    and line) it occurs."""
    known = modules(root)
    found = defaultdict(list)
    module_graph, room_graph = defaultdict(set), defaultdict(set)
    for module, (path, package) in known.items():
        where = path.relative_to(root.parent)
        inside = module.partition(".")[2] or "__init__"
        for name, line in imports(module, path, package, known):
            if name.split(".")[0] == "mpi4py" and not layers.may_import_mpi(inside):
                found[f"{inside} imports mpi4py"].append(f"{where}:{line}")
            if name not in known or name == module:
                continue
            module_graph[module].add(name)
            source, target = room(module), room(name)
            room_graph[source].add(target)
            if not layers.may_import(source, target):
                rows = f"{layer_name(source)} -> {layer_name(target)}"
                found[f"{inside} imports {target} ({rows})"].append(f"{where}:{line}")
        if room(module) in layers.THROUGH_PARALLEL:
            for call, line in communicator_calls(path):
                found[f"{inside} calls {call}"].append(f"{where}:{line}")
    for part in circles({key: value - {key} for key, value in room_graph.items()}):
        found[f"circle of rooms: {', '.join(part)}"].append("")
    for part in circles(module_graph):
        found[f"circle of modules: {', '.join(part)}"].append("")
    return dict(found)


def layer_name(name: str) -> str:
    """The layer a room of the table sits in."""
    return layers.LAYERS[layers.depth(name)].name


def tree_rooms(root: Path) -> dict[str, bool]:
    """The rooms of the package in ``root``: name -> whether it is a package."""
    found = {}
    for module, (_, package) in modules(root).items():
        parts = module.split(".")
        if len(parts) == 1:  # the package's own module
            found["__init__"] = False
        else:
            found[parts[1]] = found.get(parts[1], False) or package or len(parts) > 2
    return found


def table_differences(root: Path) -> dict[str, list[str]]:
    """Rooms of the tree the table lacks or draws as the other kind, and rooms of the table
    the tree lacks."""
    found = {}
    table, tree = layers.rooms(), tree_rooms(root)
    for name, package in tree.items():
        if name not in table:
            found[f"room {name} is not in the table"] = [str(root / name)]
        elif table[name].package != package:
            found[f"room {name} is drawn as a {'module' if package else 'package'}"] = [""]
    for name in table.keys() - tree.keys():
        found[f"room {name} of the table is not in the tree"] = [""]
    return found


def report(findings: dict[str, list[str]]) -> str:
    """One line per finding, with where it occurs."""
    return "\n".join(
        f"{finding}  [{' '.join(dict.fromkeys(filter(None, where)))}]"
        for finding, where in findings.items()
    )


def test_the_package_breaks_no_rule():
    findings = {**violations(PACKAGE), **table_differences(PACKAGE)}
    assert not findings, "imports against tachyflow.layers:\n" + report(findings)


def test_the_drawing_in_the_architecture_page_is_the_tables():
    text = ARCHITECTURE.read_text()
    section = text.split("## Layers, top to bottom", 1)[1]
    drawn = section.split("```\n", 2)[1]
    assert drawn == layers.drawing(), "paste tachyflow.layers.drawing() into the page"


def test_the_table_allows_no_circle_and_no_mpi_in_numerics():
    names = [room.name for layer in layers.LAYERS for room in layer.rooms]
    assert len(names) == len(set(names))
    for side in layers.SIDE_IMPORTS:
        for importer in side.importers:
            assert layers.depth(importer) == layers.depth(side.imported), side
    allowed = defaultdict(set)
    for side in layers.SIDE_IMPORTS:
        for importer in side.importers:
            allowed[importer].add(side.imported)
    assert circles(allowed) == []
    for place in layers.MPI_IMPORTERS:
        assert place.split(".")[0] in names, place
    assert not layers.may_import_mpi("numerics") and not layers.may_import_mpi("numerics.fft")
    assert layers.may_import_mpi("collectives.executor")
    assert not layers.may_import_mpi("collectives.simulator")
    assert not layers.may_import_mpi("runtimes")


def write(root: Path, files: dict[str, str]) -> Path:
    """A package ``tachyflow`` in ``root`` made of ``files`` (path -> source)."""
    package = root / "tachyflow"
    for name, source in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return package


# A small tree that keeps every rule: each test below breaks one.
CLEAN = {
    "errors.py": "",
    "runtime.py": "from tachyflow.errors import ConfigError\n",
    "numerics/__init__.py": "",
    "numerics/tdma.py": "import numpy\n",
    "numerics/fft.py": "from . import tdma\nfrom tachyflow.runtime import world\n",
    "parallel/__init__.py": "",
    "parallel/halo.py": "from mpi4py import MPI\nfrom ..numerics import fft\n",
    "observers/__init__.py": "",
    "observers/wake.py": (
        "from tachyflow.parallel.halo import gather\n\n"
        "def finish(run):\n"
        "    return gather(run.comm, run.comm.Get_rank())\n"
    ),
}


def test_the_checker_passes_a_tree_that_keeps_the_rules(tmp_path):
    assert violations(write(tmp_path, CLEAN)) == {}


def test_the_checker_finds_an_upward_import_even_a_lazy_one(tmp_path):
    package = write(tmp_path, {
        **CLEAN,
        "numerics/tdma.py": "def solve():\n    from tachyflow.parallel import halo\n",
    })
    found = violations(package)
    assert found["numerics.tdma imports parallel (kernels -> movement)"] == [
        "tachyflow/numerics/tdma.py:2"
    ]
    assert "circle of rooms: numerics, parallel" in found


def test_the_checker_finds_an_import_along_a_row_the_table_does_not_allow(tmp_path):
    package = write(tmp_path, {**CLEAN, "errors.py": "import tachyflow.runtime\n"})
    found = violations(package)
    assert "errors imports runtime (base -> base)" in found
    assert "circle of rooms: errors, runtime" in found


def test_the_checker_finds_a_circle_of_modules_through_a_relative_import(tmp_path):
    package = write(tmp_path, {**CLEAN, "numerics/tdma.py": "from .fft import plan\n"})
    assert violations(package) == {
        "circle of modules: tachyflow.numerics.fft, tachyflow.numerics.tdma": [""]
    }


def test_the_checker_finds_mpi_in_numerics(tmp_path):
    package = write(tmp_path, {**CLEAN, "numerics/fft.py": "import mpi4py.MPI\n"})
    assert violations(package) == {
        "numerics.fft imports mpi4py": ["tachyflow/numerics/fft.py:1"]
    }


def test_the_checker_finds_a_driver_calling_a_communicator(tmp_path):
    package = write(tmp_path, {
        **CLEAN,
        "observers/wake.py": "def finish(solver):\n    solver.decomposition.comm.gather(1)\n",
    })
    assert violations(package) == {
        "observers.wake calls comm.gather": ["tachyflow/observers/wake.py:2"]
    }


@pytest.mark.parametrize(
    ("files", "finding"),
    [
        ({"extras.py": ""}, "room extras is not in the table"),
        ({"cluster/__init__.py": ""}, "room cluster is drawn as a module"),
    ],
)
def test_the_table_and_the_tree_must_name_the_same_rooms(tmp_path, files, finding):
    assert finding in table_differences(write(tmp_path, {**CLEAN, **files}))

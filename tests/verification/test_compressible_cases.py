"""The airfoil and plate cases of the compressible solver start and run: ``rae2822-case6``
(AGARD AR-138 case 6 with SU2's conditions) and ``flat-plate-turbulent`` (NASA TMR) for a
few iterations, through ``tachyflow run``."""

import csv
import json
import math

import pytest

from tests.cli.test_cli import tachyflow


@pytest.mark.parametrize(
    ("case", "conditions"),
    [
        (
            "rae2822-case6",
            {"mach": 0.729, "alpha": 2.31, "reynolds": 6.5e6, "temperature": 288.15,
             "turbulence": "sa", "grid": "rae2822", "cells": [280, 64]},
        ),
        (
            "flat-plate-turbulent",
            {"mach": 0.2, "alpha": 0.0, "reynolds": 5e6, "temperature": 300.0,
             "turbulence": "sa", "grid": "flat-plate-tmr", "cells": [136, 96]},
        ),
    ],
)
def test_case_runs_a_few_iterations_with_its_conditions(tmp_path, case, conditions):
    steps = 3
    result = tachyflow("run", case, "--steps", str(steps), "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["iterations"] == steps and not summary["converged"]
    for key, value in conditions.items():
        assert summary["conditions"][key] == value, key
    with (tmp_path / "convergence.csv").open() as table:
        rows = list(csv.DictReader(table))
    assert len(rows) == steps
    assert all(math.isfinite(float(rows[-1][name])) for name in ("density_residual", "CL", "CD"))
    # The first iterations already load the body: a plate drags, a cambered airfoil lifts.
    loaded = "CD" if case.startswith("flat-plate") else "CL"
    assert float(rows[-1][loaded]) > 0
    with (tmp_path / "surface.csv").open() as table:
        faces = list(csv.DictReader(table))
    wall_faces = 200 if case == "rae2822-case6" else 112  # 280 - 2 x 40; 136 - 24
    assert len(faces) == wall_faces
    # The outputs the case turns on, written after the last iteration too.
    assert (tmp_path / "checkpoints" / f"step_{steps:08d}.ckpt").is_file()
    assert f"fields_vtk/step_{steps:08d}.pvts" in (tmp_path / "fields.pvd").read_text()
    pictures = sorted(p.name for p in tmp_path.glob("images/*.png"))
    airfoil = case.startswith("rae2822")
    assert pictures == ([f"mach_{steps:08d}.png", f"p_{steps:08d}.png"] if airfoil else [])

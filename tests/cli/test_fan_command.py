"""``tachyflow fan design``: the FAU benchmark fan's blade table and STL files, a section
table read back, bad input in one line."""

import csv

import numpy as np
import pytest

from tachyflow.numerics.fan_design import FanSpecification
from tests.cli.test_cli import tachyflow

trimesh = pytest.importorskip("trimesh")


def read_table(path):
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    return {name: np.array([float(row[name]) for row in rows]) for name in rows[0]}


def test_fan_design_prints_the_fau_table_and_writes_the_blades(tmp_path):
    result = tachyflow("fan", "design", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "NACA 4510, 9 blades, D 0.495 m, hub 0.2475 m, 1486 rpm" in result.stdout
    assert "free vortex r·c_u 1.5105 m²/s" in result.stdout and "BPF 222.9 Hz" in result.stdout
    # The hub row: r, chord, stagger, f/c, t/c, σ, C_L, α.
    assert "0.1237   0.0918     45.82   0.040   0.100   1.062   1.380   8.00" in result.stdout
    table = read_table(tmp_path / "sections.csv")
    design = FanSpecification().design()
    np.testing.assert_array_equal(table["chord"], design.chord)  # written as repr: exact
    np.testing.assert_array_equal(table["stagger"], design.stagger)
    blade = trimesh.load(tmp_path / "blade.stl")
    rotor = trimesh.load(tmp_path / "rotor.stl")
    assert blade.is_watertight and blade.volume > 0
    assert rotor.is_watertight and rotor.volume == pytest.approx(9 * blade.volume, rel=1e-6)
    assert blade.bounds[1, 1] == pytest.approx(0.2475, rel=1e-3)  # the tip at the rotor radius


def test_fan_design_stacks_a_section_table(tmp_path):
    designed = tachyflow("fan", "design", "--blades", "7", "-o", str(tmp_path / "a"))
    assert designed.returncode == 0, designed.stderr
    # The written table, read back with a sweep, gives the same blade shifted along its
    # chords (same volume).
    table = read_table(tmp_path / "a" / "sections.csv")
    table["sweep"] = np.linspace(0.0, 0.03, len(table["r"]))
    lines = [",".join(table)] + [",".join(repr(float(table[name][k])) for name in table)
                                 for k in range(len(table["r"]))]
    (tmp_path / "swept.csv").write_text("\n".join(lines) + "\n")
    stacked = tachyflow("fan", "design", "--sections", str(tmp_path / "swept.csv"),
                        "--blades", "7", "-o", str(tmp_path / "b"))
    assert stacked.returncode == 0, stacked.stderr
    assert "sweep" in stacked.stdout and "C_L" not in stacked.stdout
    first = trimesh.load(tmp_path / "a" / "blade.stl")
    second = trimesh.load(tmp_path / "b" / "blade.stl")
    assert second.volume == pytest.approx(first.volume, rel=1e-3)
    assert not np.allclose(second.bounds, first.bounds)
    assert set(read_table(tmp_path / "b" / "sections.csv")) == {
        "r", "chord", "stagger", "camber", "thickness", "sweep", "dihedral"}


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--flow-rate", "-1"], "flow_rate must be a positive number, got -1.0"),
        (["--hub-ratio", "1.2"], "--hub-ratio must be in (0, 1), got 1.2"),
        (["--angles", "8,x"], "--angles must be numbers separated by commas"),
        (["--section", "naca45"], "NACA 4-digit code must be four digits"),
        (["--pressure-rise", "5000"], "pressure_rise 5000.0 Pa is out of reach"),
        (["--sections", "missing.csv"], "no such section table: missing.csv"),
    ],
)
def test_fan_design_refuses_bad_input_in_one_line(tmp_path, arguments, message):
    result = tachyflow("fan", "design", *arguments, "-o", str(tmp_path))
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "rotor.stl").exists()


def test_fan_design_help_says_what_it_does():
    result = tachyflow("fan", "design", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for words in ("blade-element method", "Carolus", "FAU benchmark fan FAN-01", "--sections",
                  "rotor.stl", "total-to-static pressure rise"):
        assert words in text

"""``tachyflow case list|show|init`` and ``run --set``: the built-in cases as templates."""

import pytest

from tachyflow import config
from tests.cli.test_cli import tachyflow


def test_case_list_names_every_built_in_case_with_its_solver():
    result = tachyflow("case", "list")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()}
    assert set(rows) == set(config.builtin_cases())
    assert rows["axial-fan"] == "cylindrical" and rows["rae2822"] == "compressible"


@pytest.mark.parametrize("name", config.builtin_cases())
def test_case_show_parses_back_to_the_same_configuration(tmp_path, name):
    shown = config.load(name).to_toml(comments=True)
    path = tmp_path / "shown.toml"
    path.write_text(shown)
    assert config.load(str(path)) == config.load(name)
    assert "# one of" in shown or name == "pressure-box"  # choices are said beside keys


def test_case_show_and_init_write_an_editable_case(tmp_path):
    shown = tachyflow("case", "show", "taylor-green", "--set", "time.steps=3")
    assert shown.returncode == 0, shown.stderr
    assert "steps = 3  # integer, a positive integer" in shown.stdout
    target = tmp_path / "mine.toml"
    written = tachyflow("case", "init", "taylor-green", "-o", str(target))
    assert written.returncode == 0, written.stderr
    assert config.load(str(target)) == config.load("taylor-green")
    again = tachyflow("case", "init", "taylor-green", "-o", str(target))
    assert again.returncode == 2 and "exists" in again.stderr
    refused = tachyflow("case", "show", "taylor-green", "--set", "flow.viscocity=1")
    assert refused.returncode == 2 and "unknown key 'flow.viscocity'" in refused.stderr


def test_run_set_records_the_override_in_config_toml(tmp_path):
    output = tmp_path / "run"
    result = tachyflow("run", "taylor-green", "--set", "time.steps=2", "--set",
                       "flow.viscosity=0.05", "-o", str(output))
    assert result.returncode == 0, result.stderr
    recorded = config.load(str(output / "config.toml"))
    assert (recorded.time.steps, recorded.flow.viscosity) == (2, 0.05)

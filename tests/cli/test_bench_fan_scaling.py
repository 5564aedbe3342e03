"""``tachyflow bench fan`` predicts the paper's scales from what it measured."""

import json

import pytest

from tests.cli.test_cli import tachyflow


@pytest.mark.slow  # make test keeps a quicker run of the command
def test_bench_fan_predicts_the_papers_scales_beside_its_speedups(tmp_path):
    result = tachyflow("bench", "fan", "-n", "2", "--grid", "24", "12", "12", "--repeats", "2",
                       "--warmup", "1", "--core-speed", "20", "--ranks-per-link", "8",
                       "-o", str(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    (path,) = tmp_path.glob("fan_*.json")
    scaling = json.loads(path.read_text())["model"]["scaling"]
    assert scaling["profile"]["name"] == "infiniband-qdr"
    assert scaling["core_speed"] == 20 and scaling["ranks_per_link"] == 8
    assert scaling["measured"]["seconds_per_cell"] > 0
    flow = scaling["flow"]
    assert flow["ranks"] == [256, 512, 1024, 2048, 4096, 6144] and flow["cells"] == 1.6e9
    assert flow["paper"]["value"] == 12 and flow["paper"]["base"] == 256
    assert set(flow["parts"]) == {"compute", "transposes", "halos", "reductions"}
    assert set(scaling["noise"]) == {"A", "B", "C"}
    for series in [flow, *scaling["noise"].values()]:
        assert len(series["seconds_per_step"]) == len(series["speedup"]) == len(series["ranks"])
        assert series["paper"]["predicted_over_paper"] > 0
    assert scaling["noise"]["A"]["ranks"] == [16, 32, 64, 128]
    assert scaling["noise"]["A"]["paper"]["value"] == 6
    assert set(scaling["noise"]["C"]["parts"]) == {"flow", "noise"}
    assert set(scaling["type_speedup_over_A"]) == {"B", "C"}
    assert (tmp_path / f"{path.stem}_scaling.png").stat().st_size > 0
    assert "paper 12x" in result.stdout


def test_bench_fan_names_a_bad_profile_before_timing(tmp_path):
    result = tachyflow("bench", "fan", "-n", "1", "--profile", "tachyon9", "-o", str(tmp_path))
    assert result.returncode == 2
    assert "tachyon9" in result.stderr

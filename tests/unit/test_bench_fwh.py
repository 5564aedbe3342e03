import io
import json

import numpy as np
import pytest
from matplotlib.image import imread
from rich.console import Console

from tachyflow.bench import fwh
from tachyflow.commands import build_parser, results_modules, save_results
from tachyflow.errors import ConfigError


def test_benchmark_records_throughput_bounds_and_a_roofline_plot(tmp_path):
    document = fwh.run_fwh_benchmark(panels=24, observers=2, steps=24, repeats=2)
    json_path, png_path = save_results(document, tmp_path)
    assert json_path.name == "fwh_24panels_2observers_24steps.json"
    stored = json.loads(json_path.read_text())
    assert stored["benchmark"] == "fwh" and results_modules()["fwh"] == fwh.__name__
    assert {"load_avg", "processor"} <= stored["machine"].keys()
    assert stored["mpi"]["ranks"] == 1 and "git" in stored
    params = stored["params"]
    assert params["panels"] == 24 and params["observers"] == 2 and params["steps"] == 24
    samples = params["observer_samples"]
    assert samples >= 2

    (entry,) = stored["results"]
    assert entry["name"] == fwh.KERNEL and entry["verified"] and len(entry["samples"]) == 2
    counts = stored["counts"]
    assert counts["integrands"] == 24 * 2 * 24
    assert counts["panel_samples"] == 24 * 2 * samples
    assert entry["integrands_per_second"] == pytest.approx(counts["integrands"] / entry["median"])
    assert entry["panel_samples_per_second"] == pytest.approx(
        counts["panel_samples"] / entry["median"]
    )
    assert set(stored["probes"]) == {"vector_fma", "scalar", "triad", "divide", "sqrt"}
    assert all(len(probe["samples"]) == 2 for probe in stored["probes"].values())

    roof = stored["roofline"]
    assert set(roof["ceilings"]) == {"compute", "memory", "scalar", "divider"}
    assert all(value > 0 for value in roof["ceilings"].values())
    assert roof["bound"] > 0 and roof["limit"] in ("compute", "memory")
    assert roof["bound"] == min(roof["ceilings"]["compute"], roof["ceilings"]["memory"])
    assert 0 < roof["division_aware_bound"] <= roof["bound"]
    assert np.isfinite(roof["fraction"]) and roof["fraction"] > 0
    assert np.isfinite(roof["division_aware_fraction"])
    assert roof["peak_flops"] > roof["scalar_flops"] > 0 and roof["bandwidth"] > 0

    image = imread(png_path)
    assert image.ndim == 3 and min(image.shape[:2]) > 100
    console = Console(file=io.StringIO(), width=140)
    fwh.print_summary(stored, console)
    assert "division-aware bound" in console.file.getvalue()


def test_operation_counts_follow_the_per_kind_tables():
    # One panel, one observer, two steps and one sample: every table is used once or twice.
    counts = fwh.operation_counts(1, 1, 2, 1)
    assert counts["integrands"] == 2 and counts["panel_samples"] == 1
    assert counts["operations"] == {"add": 2 * 4 + 2 * 21 + 3 + 8,
                                    "mul": 2 * 7 + 2 * 43 + 2 + 4,
                                    "div": 2 * 2 + 1, "sqrt": 2}  # fmt: skip
    assert counts["flops"] == 2 * 11 + 2 * 67 + 6 + 12
    assert counts["bytes"] == 2 * 19 * 8 + 2 * 50
    assert counts["intensity"] == pytest.approx(counts["flops"] / counts["bytes"])


def test_too_few_steps_for_the_arrival_spread_are_refused():
    with pytest.raises(ConfigError, match="too few"):
        fwh.run_fwh_benchmark(panels=24, observers=2, steps=10, repeats=1)


def test_command_line_reaches_the_benchmark():
    args = build_parser().parse_args(["bench", "fwh", "--panels", "24", "--steps", "30"])
    assert args.command_object.name == "bench fwh"
    assert (args.panels, args.observers, args.steps, args.repeats) == (24, 16, 30, 5)

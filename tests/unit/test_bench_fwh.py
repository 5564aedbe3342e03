import io
import json

import numpy as np
import pytest
from matplotlib.image import imread
from rich.console import Console

from tachyflow.bench import fwh
from tachyflow.commands import build_parser, results_modules, save_results
from tachyflow.commands.bench.fwh import SCHEME_NAMES
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

    # Both schemes, each verified against FWHSolver with its options and timed.
    assert [entry["name"] for entry in stored["results"]] == ["fourth", "second"]
    assert set(stored["probes"]) == {"vector_fma", "scalar", "triad", "divide", "sqrt"}
    assert all(len(probe["samples"]) == 2 for probe in stored["probes"].values())
    roof = stored["roofline"]
    assert roof["peak_flops"] > roof["scalar_flops"] > 0 and roof["bandwidth"] > 0
    for entry in stored["results"]:
        scheme = fwh.SCHEMES[entry["name"]]
        assert entry["kernel"] == scheme.kernel.__name__
        assert entry["time_order"] == scheme.options["time_order"]
        assert entry["verified"] and len(entry["samples"]) == 2
        counts = stored["counts"][entry["name"]]
        assert counts["integrands"] == 24 * 2 * 24
        assert counts["panel_samples"] == 24 * 2 * samples
        assert entry["integrands_per_second"] == pytest.approx(
            counts["integrands"] / entry["median"]
        )
        bounds = roof["schemes"][entry["name"]]
        assert set(bounds["ceilings"]) == {"compute", "memory", "scalar", "divider"}
        assert all(value > 0 for value in bounds["ceilings"].values())
        assert bounds["limit"] in ("compute", "memory")
        assert bounds["bound"] == min(bounds["ceilings"]["compute"], bounds["ceilings"]["memory"])
        assert 0 < bounds["division_aware_bound"] <= bounds["bound"]
        assert np.isfinite(bounds["fraction"]) and bounds["fraction"] > 0
        assert np.isfinite(bounds["division_aware_fraction"])
    # The cubic interpolation costs more per integrand, in flops and in state traffic.
    fourth, second = stored["counts"]["fourth"], stored["counts"]["second"]
    assert fourth["flops"] > second["flops"] and fourth["bytes"] > second["bytes"]

    image = imread(png_path)
    assert image.ndim == 3 and min(image.shape[:2]) > 100
    console = Console(file=io.StringIO(), width=200)
    fwh.print_summary(stored, console)
    text = console.file.getvalue()
    assert "division-aware bound" in text and "order 4, cubic" in text
    assert "order 2, linear" in text


def test_one_scheme_alone_and_unknown_schemes():
    document = fwh.run_fwh_benchmark(panels=24, observers=2, steps=24, repeats=1,
                                     schemes=("second",))
    assert [entry["name"] for entry in document["results"]] == ["second"]
    assert set(document["counts"]) == set(document["roofline"]["schemes"]) == {"second"}
    for schemes in ((), ("sixth",)):
        with pytest.raises(ValueError, match="schemes must be names among"):
            fwh.run_fwh_benchmark(panels=24, observers=2, steps=24, schemes=schemes)


def test_operation_counts_follow_the_per_kind_tables():
    # One panel, one observer, two steps and one sample: every table is used once or twice.
    counts = fwh.operation_counts(fwh.SCHEMES["second"], 1, 1, 2, 1)
    assert counts["integrands"] == 2 and counts["panel_samples"] == 1
    assert counts["operations"] == {"add": 2 * 4 + 2 * 21 + 3 + 8,
                                    "mul": 2 * 7 + 2 * 43 + 2 + 4,
                                    "div": 2 * 2 + 1, "sqrt": 2}
    assert counts["flops"] == 2 * 11 + 2 * 67 + 6 + 12
    assert counts["bytes"] == 2 * 19 * 8 + 2 * 50
    assert counts["intensity"] == pytest.approx(counts["flops"] / counts["bytes"])
    # The cubic: per interval 5 flops, per sampled interval 24 (set-up), per sample 34.
    counts = fwh.operation_counts(fwh.SCHEMES["fourth"], 1, 1, 2, 1)
    assert counts["operations"] == {"add": 2 * 4 + 2 * 21 + 2 + 12 + 13,
                                    "mul": 2 * 7 + 2 * 43 + 2 + 8 + 21,
                                    "div": 2 * 2 + 1 + 4, "sqrt": 2}
    assert counts["bytes"] == 2 * 19 * 8 + 2 * 160


def test_too_few_steps_for_the_arrival_spread_are_refused():
    with pytest.raises(ConfigError, match="too few"):
        fwh.run_fwh_benchmark(panels=24, observers=2, steps=10, repeats=1)


def test_command_line_reaches_the_benchmark():
    args = build_parser().parse_args(["bench", "fwh", "--panels", "24", "--steps", "30"])
    assert args.command_object.name == "bench fwh"
    assert (args.panels, args.observers, args.steps, args.repeats) == (24, 16, 30, 5)
    assert args.scheme == "all"
    args = build_parser().parse_args(["bench", "fwh", "--scheme", "fourth"])
    assert args.scheme == "fourth"
    # The command's choices (it does not import the benchmark to parse) are its schemes.
    assert SCHEME_NAMES == tuple(fwh.SCHEMES)

"""``tachyflow bench mpins2d`` end to end on a tiny RAE 2822 grid: both relaxations timed
and verified, their phases and runs to a residual, the SU2 peer or why it is missing."""

import json
import stat

from tachyflow.bench.mpins2d import find_su2, read_su2_history, su2_config
from tachyflow.config import load
from tachyflow.solvers.compressible.solver import PHASES
from tests.cli.test_cli import tachyflow


def test_bench_mpins2d_times_both_methods_and_their_runs(tmp_path):
    result = tachyflow(
        "bench", "mpins2d", "-n", "2", "--cells", "56", "16", "--repeats", "2",
        "--warmup", "8", "--iterations", "2", "--to-residual", "0.3",
        "--max-iterations", "100", "-o", str(tmp_path), timeout=120,
        # No SU2 anywhere it looks, even where make install-bench has built one.
        env={"TACHYFLOW_SU2": str(tmp_path / "nowhere"),
             "TACHYFLOW_PEERS_BUILD": str(tmp_path / "no-peers")},
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    document = json.loads((tmp_path / "mpins2d_56x16_2x1.json").read_text())
    assert document["benchmark"] == "mpins2d" and document["mpi"]["ranks"] == 2
    assert document["params"]["global_shape"] == [56, 16]
    assert document["params"]["sweeps"] == {"lu-sgs": 1, "dp-sgs": 4}
    assert [e["method"] for e in document["results"]] == ["lu-sgs", "dp-sgs"]
    for entry in document["results"]:
        assert entry["verified"] is True and entry["density_residual"] < 1.0
        assert len(entry["samples"]) == 2 and entry["seconds_per_iteration"] > 0
        assert tuple(entry["phases_per_iteration"]) == PHASES
        assert entry["phases_per_iteration"]["implicit"] > 0
        run = entry["to_residual"]
        assert run["reached"] is True and run["density_residual"] <= 0.3
        assert 5 <= run["iterations"] < 100 and 0 < run["CL"] < 1.5
    assert document["peers"] == []
    assert "nowhere" in document["peers_missing"]["SU2"]


def test_su2_is_found_by_variable_and_configured_like_the_case(tmp_path):
    binary = tmp_path / "bin" / "SU2_CFD"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    assert find_su2({"TACHYFLOW_SU2": str(binary.parent)}) == (binary, "")
    assert find_su2({"SU2_HOME": str(tmp_path), "PATH": ""}) == (binary, "")
    built = tmp_path / "peers" / "SU2" / "install" / "bin" / "SU2_CFD"  # make install-bench's
    built.parent.mkdir(parents=True)
    built.write_bytes(binary.read_bytes())
    built.chmod(binary.stat().st_mode)
    peers = {"TACHYFLOW_PEERS_BUILD": str(tmp_path / "peers"), "PATH": ""}
    assert find_su2(peers) == (built, "")
    missing, why = find_su2({"TACHYFLOW_PEERS_BUILD": str(tmp_path / "none"), "PATH": ""})
    assert missing is None and "SU2_CFD" in why and "make install-bench" in why
    text = su2_config(load("rae2822").compressible, "mesh.su2", 1e-7, 500)
    settings = dict(line.split("= ", 1) for line in text.splitlines())
    assert settings["MACH_NUMBER"] == "0.73" and settings["AOA"] == "2.79"
    assert settings["REYNOLDS_NUMBER"] == "6500000.0" and settings["KIND_TURB_MODEL"] == "SA"
    assert float(settings["CONV_RESIDUAL_MINVAL"]) == -7.0
    history = tmp_path / "history.csv"
    # SU2 8.1's columns (padded, quoted); its CMz is positive nose-down.
    history.write_text('"Inner_Iter",       "CD"       ,       "CL"       ,      "CMz"       ,'
                       '   "relrms[Rho]"  \n'
                       '          0,  0.2, 0.1, 0.01,  0.0\n'
                       '        811,  0.0181,  0.79,  0.093,  -7.01\n')
    read = read_su2_history(history)
    assert read["iterations"] == 812 and abs(read["density_residual"] - 10**-7.01) < 1e-20
    assert (read["CL"], read["CD"], read["CM"]) == (0.79, 0.0181, -0.093)
    assert settings["REF_ORIGIN_MOMENT_Z"] == "0.0"

"""A large-eddy simulation's statistics carry each station's mean ν_t / ν, the same on 1
and 2 ranks, zero at the walls' mirrored edges and positive inside."""

import csv

import numpy as np

from tests.cli.test_cli import tachyflow


def profile(folder, ranks):
    result = tachyflow(
        "run", "channel-les-395", "-n", str(ranks), "--quiet", "-o", str(folder),
        "--set", "grid.cells=[12,16,12]", "--set", "time.steps=12",
        "--set", "statistics.every=3", "--set", "statistics.start_time=0.0",
        "--set", "output.checkpoint_every=0", "--set", "output.images_every=0",
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    with (folder / "profiles.csv").open() as table:
        rows = list(csv.DictReader(table))
    return np.array([float(row["nu_t_over_nu"]) for row in rows])


def test_the_eddy_viscosity_profile_is_written_and_rank_independent(tmp_path):
    one, two = profile(tmp_path / "one", 1), profile(tmp_path / "two", 2)
    assert len(one) == 16 and one.max() > 0 and np.all(one >= 0)
    np.testing.assert_allclose(one, two, rtol=1e-9, atol=1e-14)

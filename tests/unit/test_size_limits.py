"""The memory checks of the sizes a user gives, in the API (issue 45 item 10)."""

import pytest
from mpi4py import MPI

from tachyflow import runtime
from tachyflow.acoustics import fwh, in_run, offline
from tachyflow.acoustics.options import AcousticsSection
from tachyflow.errors import ConfigError


def test_require_memory_gives_both_figures(monkeypatch):
    monkeypatch.setattr(runtime, "available_memory", lambda: 2 * 2**30)
    runtime.require_memory(2 * 2**30, "this")
    with pytest.raises(ConfigError, match=r"^that would need about 3\.0 GiB of memory; this "
                       r"node has 2\.0 GiB available$"):
        runtime.require_memory(3 * 2**30, "that")
    monkeypatch.setattr(runtime, "available_memory", lambda: None)  # unknown: no refusal
    runtime.require_memory(2**60, "anything")


def test_available_memory_is_read_from_this_node():
    available = runtime.available_memory()
    assert available is None or 0 < available


def test_an_fwh_prediction_grows_with_each_of_its_sizes():
    base = fwh.memory_needed(13, 1024, 2000)
    assert fwh.memory_needed(26, 1024, 2000) == 2 * base
    assert fwh.memory_needed(13, 2048, 2000) > base
    assert fwh.memory_needed(13, 1024, 4000) > base
    assert fwh.memory_needed(13, 1024, 2000, "linear") < base
    assert fwh.memory_needed(13, 1024, 2000, ranks=2) > base  # each rank its distances


def test_an_observers_file_too_large_is_refused_before_its_arc_is_made(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime, "available_memory", lambda: 2**30)
    path = tmp_path / "observers.toml"
    path.write_text("[arc]\nradius = 5.0\ncount = 100000000\n")  # the issue's: 24 GB grown
    with pytest.raises(ConfigError, match=r"100,000,000 observers would need about 37\.3 GiB"):
        offline.read_observers(path, MPI.COMM_SELF)
    path.write_text("[arc]\nradius = 5.0\ncount = 1000\n")
    setup = offline.read_observers(path)
    assert len(setup.names) == 1000
    with pytest.raises(ConfigError, match=r"1,000 observers x 1,024 samples from 1,000,000 "
                       r"panels on 1 rank\(s\) would need about"):
        offline.check_memory(setup, 10**6, path, MPI.COMM_SELF)
    offline.check_memory(setup, 1000, path)


@pytest.mark.parametrize(("keys", "panels"), [
    ({"surface": "sphere", "panels": 10**9}, 10**9),
    ({"surface": "box", "spacing": 1e-4}, 6 * 10**8),
])
def test_an_acoustics_section_too_large_is_refused_before_its_surface_is_made(
        monkeypatch, keys, panels):
    monkeypatch.setattr(runtime, "available_memory", lambda: 2**30)
    section = AcousticsSection(arc_radius=5.0, **keys)
    assert in_run.planned_panels(section) == pytest.approx(panels, rel=1e-6)
    with pytest.raises(ConfigError, match=rf"^\[acoustics\]: 13 observers x 1,024 samples "
                       rf"from {in_run.planned_panels(section):,} panels on 1 rank\(s\)"):
        in_run.check_memory(section, in_run.planned_panels(section), MPI.COMM_SELF)
    in_run.check_memory(AcousticsSection(arc_radius=5.0), 2000, MPI.COMM_SELF)

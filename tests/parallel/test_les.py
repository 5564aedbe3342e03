"""Large-eddy simulation on the Cartesian pencil solver (the cylindrical one's:
test_cylindrical_les.py): a model that vanishes in pure
shear leaves a laminar channel's steps bit for bit those of the DNS; ν_t is the same on
1, 2 and 3 ranks; the subgrid stress takes energy out of a Taylor–Green vortex."""

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.solvers.pencil.incompressible import IncompressibleSolver


def run(name, comm, model, steps, cells, **les):
    case = config.load(name).replace("grid", cells=cells).replace(
        "parallel", proc_grid=(comm.size, 1)
    ).replace("les", model=model, **les)
    solver = IncompressibleSolver.from_case(case, comm, "estimate")
    solver.fused = False  # the DNS updates term by term too, for bit equality
    for _ in range(steps):
        solver.step(0.01)
    return solver


def finish(solver):
    solver.free()
    solver.decomposition.free()


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("model", ["vreman", "wale", "dynamic-global"])
def test_a_laminar_channel_is_the_dns_bit_for_bit_with_shear_free_models(model):
    # Starting from rest under a pressure gradient: u = u(y, t), one gradient direction.
    comm = MPI.COMM_WORLD
    fields = []
    for chosen in ("none", model):
        solver = run("poiseuille", comm, chosen, 4, (8, 12, 6))
        fields.append([solver.halo.interior(f).copy() for f in (*solver.velocity_arrays(),
                                                                  solver.p)])
        if chosen != "none":
            parallel_assert(not solver.subgrid.owned().any(), f"{model}: ν_t is not zero")
            assert solver.statistics()["max_eddy_viscosity_ratio"] == 0.0
        finish(solver)
    equal = all(np.array_equal(a, b) for a, b in zip(*fields, strict=True))
    parallel_assert(equal, f"{model}: the laminar LES differs from the DNS")


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("model", ["smagorinsky", "vreman", "wale", "dynamic-global"])
def test_eddy_viscosity_is_the_same_on_any_rank_count_and_takes_energy(model):
    comm = MPI.COMM_WORLD
    solver = run("taylor-green", comm, model, 3, (12, 10, 8))
    nu_t = solver.decomposition.gather_global(solver.cell_field("nu_t"), "y")
    energy = solver.statistics()["kinetic_energy"]
    statistics = solver.statistics()
    finish(solver)
    reference = run("taylor-green", MPI.COMM_SELF, model, 3, (12, 10, 8))
    expected = reference.decomposition.gather_global(reference.cell_field("nu_t"), "y")
    reference_coefficient = reference.subgrid.coefficient
    dns = run("taylor-green", MPI.COMM_SELF, "none", 3, (12, 10, 8))
    dns_energy = dns.statistics()["kinetic_energy"]
    finish(reference)
    finish(dns)
    if comm.rank == 0:
        np.testing.assert_allclose(nu_t, expected, rtol=1e-10, atol=1e-14)
        assert nu_t.max() > 0 and statistics["eddy_viscosity_ratio"] > 0
    if model == "dynamic-global":  # one coefficient, the same from every rank count
        assert statistics["dynamic_coefficient"] == pytest.approx(
            reference_coefficient, rel=1e-10)
    parallel_assert(energy < dns_energy, f"{model}: no energy taken ({energy} >= {dns_energy})")


def test_les_options_are_the_pencil_solvers_own():
    case = config.load("channel").replace("les", model="smagorinsky", constant=0.17)
    assert case.les.subgrid() == ("smagorinsky", 0.17, True, "germano")
    assert config.load("channel").les.subgrid() is None
    with pytest.raises(ConfigError, match=r"'les\.model' must be one of \('none', 'dyn"):
        config.parse('[les]\nmodel = "dynamic"\n')
    cylindrical = config.parse('[case]\nsolver = "cylindrical"\n[les]\nmodel = "wale"\n')
    assert cylindrical.les.subgrid() == ("wale", None, True, "germano")
    with pytest.raises(ConfigError, match=r"unknown section \[les\] \(solver 'compressible'"):
        config.parse('[case]\nsolver = "compressible"\n[les]\nmodel = "wale"\n')

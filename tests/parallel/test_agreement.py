"""parallel.agreement: an error on some ranks is raised on every rank, the same one."""

import pytest
from mpi4py import MPI

from tachyflow.errors import ConfigError, SimulationDiverged
from tachyflow.parallel import agreement


@pytest.mark.parallel([1, 2, 3])
def test_the_lowest_failing_ranks_error_is_raised_everywhere():
    comm = MPI.COMM_WORLD
    failing = {comm.size - 1, comm.size // 2}
    with pytest.raises(ConfigError) as raised:
        with agreement.collectively(comm):
            if comm.rank in failing:
                raise ConfigError(f"bad input on rank {comm.rank}")
    first = min(failing)
    assert str(raised.value) == f"bad input on rank {first}"
    assert agreement.agreed_rank(raised.value) == first


@pytest.mark.parallel([1, 2, 3])
def test_errors_with_keyword_fields_keep_their_type_and_fields():
    comm = MPI.COMM_WORLD
    problem = None
    if comm.rank == comm.size - 1:
        problem = SimulationDiverged("u is not finite", step=7, time=0.5, field="u")
    with pytest.raises(SimulationDiverged) as raised:
        agreement.agree(comm, problem)
    assert (raised.value.step, raised.value.field) == (7, "u")


@pytest.mark.parallel([1, 2, 3])
def test_nothing_is_raised_when_every_rank_succeeds_and_other_types_pass_through():
    comm = MPI.COMM_WORLD
    with agreement.collectively(comm):
        pass
    with pytest.raises(KeyError), agreement.collectively(comm, ValueError):
        raise KeyError("not caught: every rank raises it itself")


class Unpicklable(Exception):
    def __init__(self, message, handle):
        super().__init__(message)
        self.handle = handle

    def __reduce__(self):
        raise TypeError("cannot pickle")


@pytest.mark.parallel([1, 2, 3])
def test_an_unpicklable_error_arrives_as_a_runtime_error_naming_it():
    comm = MPI.COMM_WORLD
    expected = Unpicklable if comm.rank == 0 else RuntimeError  # the original where raised
    with pytest.raises(expected, match="lock held"):
        with agreement.collectively(comm):
            if comm.rank == 0:
                raise Unpicklable("lock held", handle=object())


@pytest.mark.parallel([1, 2, 3])
def test_on_root_shares_the_value_or_the_error():
    comm = MPI.COMM_WORLD
    assert agreement.on_root(comm, lambda: 42, share=True) == 42
    assert agreement.on_root(comm, lambda: 42) == (42 if comm.rank == 0 else None)
    with pytest.raises(OSError, match=r"missing\.msh"):
        agreement.on_root(comm, lambda: open("/nonexistent/missing.msh"))

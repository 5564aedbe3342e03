"""Fitted machine profiles drive ``algo="auto"``, resolved once and cached by content."""

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow import collectives
from tachyflow.bench.results import write_json
from tachyflow.collectives import plans
from tachyflow.collectives.selection import choice_cache_info
from tachyflow.models import Hockney, LogGP
from tachyflow.models.profiles import PROFILE_VARIABLE, profile_document, resolve_profile

# The name `tachyflow model fit` gives the fit of `tachyflow bench pingpong -n 2 -o r`:
# neither a built-in profile nor a file, which the auto choice once reloaded by.
FIT_NAME = "pingpong_2ranks"
QUALITY = {"rms_relative_error": 0.01, "max_relative_error": 0.02, "points": 12}


def fitted_document(default: str, latency: float) -> dict:
    """A profile as `tachyflow model fit` writes it: both fits, ``default`` first choice;
    ``latency`` (seconds) sets the start-up of both, so that the content is the test's."""
    hockney = Hockney(latency, 2e-10, FIT_NAME, gamma=1e-10, sigma=2e-6, exchange=1.3)
    loggp = LogGP(latency / 2, latency / 4, latency / 3, 2e-10, FIT_NAME, gamma=1e-10, sigma=2e-6)
    return profile_document(hockney, QUALITY, "r/pingpong_2ranks.json", (loggp, QUALITY), default)


def shared_file(comm, tmp_path_factory, document: dict) -> str:
    """Rank 0 writes ``document`` to a fresh file; every rank gets its path."""
    path = None
    if comm.rank == 0:
        path = str(tmp_path_factory.mktemp("profile") / "m.json")
        write_json(path, document)
    return comm.bcast(path)


def rewrite(comm, path: str, document: dict) -> None:
    """Replace the profile's content once every rank is done with the old one."""
    comm.Barrier()
    if comm.rank == 0:
        write_json(path, document)
    comm.Barrier()


@pytest.mark.parallel([1, 2])
@pytest.mark.parametrize(("default", "kind", "latency"), [("hockney", Hockney, 3.1e-6),
                                                           ("loggp", LogGP, 4.3e-6)])
def test_fitted_profile_drives_auto_through_the_environment_and_a_path(
    default, kind, latency, monkeypatch, tmp_path_factory
):
    comm = MPI.COMM_WORLD
    path = shared_file(comm, tmp_path_factory, fitted_document(default, latency))
    monkeypatch.setenv(PROFILE_VARIABLE, path)
    values = np.arange(1000, dtype=np.float64) + comm.rank
    expected = comm.size * np.arange(1000) + comm.size * (comm.size - 1) / 2
    checks = {}

    start = choice_cache_info()
    by_variable, choice = collectives.allreduce(comm, values, explain=True)
    first = choice_cache_info()
    by_path, again = collectives.allreduce(comm, values, profile=path, explain=True)
    second = choice_cache_info()
    checks["results"] = np.array_equal(by_variable, expected) and np.array_equal(by_path, expected)
    checks["the fit's model, named"] = (
        isinstance(resolve_profile().model, kind) and choice.profile == FIT_NAME
    )
    checks["first call chooses"] = first.misses - start.misses == 1
    hits, misses = second.hits - first.hits, second.misses - first.misses
    checks["same content, by path, hits"] = (hits, misses) == (1, 0)
    checks["same choice"] = again == choice

    key = resolve_profile().key
    rewrite(comm, path, fitted_document(default, 4 * latency))
    changed, fresh = collectives.allreduce(comm, values, explain=True)
    third = choice_cache_info()
    checks["new content, new key"] = resolve_profile(path).key != key
    checks["new content chooses again"] = third.misses - second.misses == 1
    # One rank sends nothing: every prediction is 0 under any numbers.
    checks["predicted from the new numbers"] = (
        fresh.predictions != choice.predictions or comm.size == 1
    )
    checks["result after the change"] = np.array_equal(changed, expected)
    parallel_assert(all(checks.values()), str(checks))


@pytest.mark.parallel([1, 2])
def test_another_variable_value_is_another_profile(monkeypatch, tmp_path_factory):
    comm = MPI.COMM_WORLD
    slow = shared_file(comm, tmp_path_factory, fitted_document("hockney", 5.3e-6))
    fast = shared_file(comm, tmp_path_factory, fitted_document("hockney", 0.7e-6))
    values = np.ones(64)
    monkeypatch.setenv(PROFILE_VARIABLE, slow)
    _, on_slow = collectives.allreduce(comm, values, explain=True)
    before = choice_cache_info()
    monkeypatch.setenv(PROFILE_VARIABLE, fast)
    result, on_fast = collectives.allreduce(comm, values, explain=True)
    parallel_assert(
        choice_cache_info().misses - before.misses == 1
        and resolve_profile(fast).key != resolve_profile(slow).key
        and (on_fast.predictions["native"] < on_slow.predictions["native"] or comm.size == 1)
        and np.array_equal(result, np.full(64, comm.size)),
        f"{on_slow} / {on_fast}",
    )


@pytest.mark.parallel([1, 2])
def test_plans_stay_within_the_byte_budget(monkeypatch):
    comm = MPI.COMM_WORLD
    monkeypatch.setattr(plans.PLANS, "budget", 64 * 1024)
    plans.PLANS.clear()
    hits, misses = plans.PLANS.hits, plans.PLANS.misses
    failures = []
    for count in (8, 256, 4096, 8, 256):  # 4096 doubles per block: a workspace over budget
        send = np.arange(comm.size * count, dtype=np.float64) + 1000 * comm.rank
        expected = collectives.alltoall(comm, send, "native")
        result = collectives.alltoall(comm, send, "pairwise")
        if not np.array_equal(result, expected):
            failures.append(("wrong result", count))
        if plans.PLANS.nbytes > plans.PLANS.budget:
            failures.append(("over budget", count, plans.PLANS.nbytes))
    # The large plan was used once and dropped alone; the small ones were used again.
    if (plans.PLANS.hits - hits, plans.PLANS.misses - misses, len(plans.PLANS)) != (2, 3, 2):
        failures.append(("hits, misses, kept", plans.PLANS.hits - hits, len(plans.PLANS)))
    parallel_assert(not failures, str(failures))

import numpy as np
import pytest

from tachyflow.collectives.plans import (
    BUDGET_VARIABLE,
    DEFAULT_BUDGET,
    ByteBudgetCache,
    budget_from_environment,
)
from tachyflow.errors import ConfigError


def doubles(count: int):
    """A builder of ``count`` float64 (8 bytes each)."""
    return lambda: np.zeros(count)


def test_least_recently_used_values_go_first_once_past_the_budget():
    cache = ByteBudgetCache(100)
    a = cache.get("a", doubles(5))
    cache.get("b", doubles(5))
    assert cache.nbytes == 80 and len(cache) == 2
    assert cache.get("a", doubles(5)) is a  # a hit: "a" is now the most recent
    cache.get("c", doubles(5))  # 120 bytes: "b", least recently used, goes
    assert "b" not in cache and "a" in cache and "c" in cache
    assert (cache.hits, cache.misses, cache.nbytes) == (1, 3, 80)


class Holder:
    """A value whose arrays grow while it is in use, as a plan's scratch does."""

    def __init__(self):
        self.arrays = []

    @property
    def nbytes(self):
        return sum(array.nbytes for array in self.arrays)


def test_values_that_grow_in_use_are_measured_again():
    cache = ByteBudgetCache(1000)
    cache.get("small", doubles(10))
    holder = cache.get("holder", Holder)
    holder.arrays.append(np.zeros(100))
    cache.settle("holder")  # 80 + 800 bytes
    assert cache.nbytes == 880 and "small" in cache
    holder.arrays.append(np.zeros(10))
    cache.settle("holder")  # 960 bytes: within
    cache.get("small", doubles(10))  # "small" is now the most recent, "holder" the least
    holder.arrays.append(np.zeros(10))
    cache.settle("holder")  # 1040 bytes: "holder", the least recently used, goes
    assert "holder" not in cache and cache.nbytes == 80


def test_a_value_larger_than_the_budget_is_used_once_and_not_kept():
    cache = ByteBudgetCache(100)
    cache.get("kept", doubles(5))
    large = cache.get("large", doubles(20))
    assert large.nbytes == 160  # handed out all the same
    assert "large" not in cache and "kept" in cache and cache.nbytes == 40
    cache.settle("large")  # settling a dropped value does nothing
    assert cache.nbytes == 40


def test_a_smaller_budget_drops_values_at_once():
    cache = ByteBudgetCache(1000)
    for key in "abc":
        cache.get(key, doubles(10))
    cache.budget = 160
    assert [key for key in "abc" if key in cache] == ["b", "c"]
    cache.budget = 0
    assert len(cache) == 0 and cache.nbytes == 0
    with pytest.raises(ValueError, match="must be >= 0 bytes, got -1"):
        ByteBudgetCache(-1)
    with pytest.raises(TypeError, match=r"whole number of bytes, got 1\.5"):
        cache.budget = 1.5


def test_budget_from_the_environment(monkeypatch):
    monkeypatch.delenv(BUDGET_VARIABLE, raising=False)
    assert budget_from_environment() == DEFAULT_BUDGET == 64 * 2**20
    monkeypatch.setenv(BUDGET_VARIABLE, "1048576")
    assert budget_from_environment() == 2**20
    monkeypatch.setenv(BUDGET_VARIABLE, "64MiB")
    with pytest.raises(ConfigError, match=r"TACHYFLOW_PLAN_CACHE_BYTES must be .* got '64MiB'"):
        budget_from_environment()

import numpy as np
import pytest

from tachyflow.programs.npb.random import A, power, randlc, seed_after, vranlc


def test_the_generator_is_the_46_bit_congruence_of_npb():
    seed = 314159265.0
    value, next_seed = randlc(seed, A)
    assert next_seed == (int(A) * int(seed)) % 2**46
    assert value == pytest.approx(next_seed / 2**46, rel=1e-15)
    numbers = np.empty(1000)
    last = vranlc(1000, seed, A, numbers)
    exact, x = [], int(seed)
    for _ in range(1000):
        x = (int(A) * x) % 2**46
        exact.append(x / 2**46)
    assert np.array_equal(numbers, np.array(exact)) and last == x


def test_jump_ahead_lands_where_stepping_does():
    seed = 271828183.0
    numbers = np.empty(12345)
    stepped = vranlc(12345, seed, A, numbers)
    assert seed_after(seed, 12345) == stepped
    assert power(A, 0) == 1.0 and power(A, 1) == A
    assert power(A, 2**40) == pow(int(A), 2**40, 2**46)

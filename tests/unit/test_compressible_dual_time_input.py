"""Bad dual-time input is refused when the case is read (naming the key, the value and what
was expected) or when the stepper is built."""

import numpy as np
import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics.compressible.gas import FreeStream
from tachyflow.numerics.compressible.metrics import BlockMetrics
from tachyflow.numerics.compressible.residual import FlowDiscretisation
from tachyflow.numerics.compressible.time_integration import DualTimeStepper, ImplicitStepper

COMPRESSIBLE = '[case]\nsolver = "compressible"\n[compressible]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('time_stepping = "dual-sgs"\n[time]\ndt = 0.1',
         r"'compressible.time_stepping' must be one of \(.*'dual-dp-sgs'\), got 'dual-sgs'"),
        ('time_stepping = "dual-dp-sgs"',
         r"'time.dt' must be > 0, the physical time step, with compressible.time_stepping = "
         r"'dual-dp-sgs', got 0.0"),
        ('time_stepping = "dual-lu-sgs"\ninner_iterations = 0\n[time]\ndt = 0.1',
         r"'compressible.inner_iterations' must be >= 1, got 0"),
        ("inner_iterations = 2.5", r"'compressible.inner_iterations' must be int, got 2.5"),
        ("inner_tolerance = 1.0", r"'compressible.inner_tolerance' must be in \(0, 1\).*got 1.0"),
        ("inner_tolerance = 0.0", r"'compressible.inner_tolerance' must be in \(0, 1\).*got 0.0"),
    ],
)
def test_bad_dual_time_keys_are_named(text, message):
    with pytest.raises(ConfigError, match=message):
        config.parse(COMPRESSIBLE + text, "dual.toml")


def test_dual_time_case_with_a_physical_step_is_accepted():
    case = config.parse(COMPRESSIBLE + 'time_stepping = "dual-dp-sgs"\n[time]\ndt = 0.1')
    assert case.compressible.inner_iterations == 30 and case.compressible.inner_tolerance == 1e-3


@pytest.mark.parametrize(
    ("iterations", "tolerance", "message"),
    [(0, 1e-3, "inner_iterations must be >= 1, got 0"),
     (5, 0.0, r"inner_tolerance must be in \(0, 1\), got 0.0"),
     (5, np.nan, r"inner_tolerance must be in \(0, 1\), got nan")],
)
def test_dual_time_stepper_refuses_bad_arguments(iterations, tolerance, message):
    s = np.linspace(0.0, 1.0, 9)
    x, y = np.meshgrid(s, s, indexing="ij")
    disc = FlowDiscretisation(BlockMetrics.from_nodes(x, y, 2), FreeStream(mach=0.5))
    with pytest.raises(ValueError, match=message):
        DualTimeStepper(ImplicitStepper(disc), iterations, tolerance, lambda v: v)

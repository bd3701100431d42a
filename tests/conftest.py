"""Test-suite setup: 8 fake CPU devices for the sharding tests.

XLA reads this flag when the CPU backend initialises, so it must be set before
anything imports jax (conftest is imported before every test module).
"""

import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()

import jax  # noqa: E402  (after the flag, on purpose)
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    """A NumPy generator per test, seeded so a failure reproduces."""
    return np.random.default_rng(0)


def pytest_report_header(config):
    return f"jax {jax.__version__}, devices: {len(jax.devices())} x {jax.devices()[0].platform}"

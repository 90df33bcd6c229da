"""Shared test setup.

* Eight CPU devices, so multi-device tests run on any machine.
* 64-bit types are per test, never global: a test module marked ``pytest.mark.x64`` gets them
  for each of its tests, and every test ends with the mode it started with (a setting leaked
  from one module used to change the dtypes of tests that ran after it in the same worker).
"""

import jax
import pytest

jax.config.update("jax_num_cpu_devices", 8)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "x64: run the test with jax_enable_x64 on")


@pytest.fixture(autouse=True)
def _x64_mode(request: pytest.FixtureRequest):
    before = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", request.node.get_closest_marker("x64") is not None)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A module marked x64 is also imported with 64-bit types on, so the arrays it builds at
    import time (parameter tables) are 64-bit, as its tests expect."""
    marked = (
        isinstance(collector, pytest.Module) and "pytest.mark.x64" in collector.path.read_text()
    )
    if not marked:
        return (yield)
    before = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", True)
    try:
        return (yield)
    finally:
        jax.config.update("jax_enable_x64", before)

"""Shared test setup: eight CPU devices, so multi-device tests run on any machine."""

import jax

jax.config.update("jax_num_cpu_devices", 8)

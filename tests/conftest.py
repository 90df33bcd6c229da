"""Shared test setup.

* Eight CPU devices, so multi-device tests run on any machine.
* 64-bit types are per test, never global: a test module marked ``pytest.mark.x64`` gets them
  for each of its tests, and every test ends with the mode it started with (a setting leaked
  from one module used to change the dtypes of tests that ran after it in the same worker).
"""

import os
from pathlib import Path

# The suite compiles thousands of small programs and runs each a few times; compiling is about
# half of its time. Two settings of XLA's CPU backend make that fast: LLVM's optimisation off
# (about a third off: tests/stages/test_split.py 17.6 s of CPU -> 12.4 s), and XLA's elemental
# emitters in place of its MLIR fusion emitters (half again: test_split.py with
# test_step_protocol.py, 24.7 s of compiling -> 10.9 s; this first tier 23:52 -> about 14:00 on
# 2 idle cores). The oracle (JAX, XLA) runs under the same settings as what it checks; child
# processes inherit them. HLOPIPE_TEST_XLA_OPT=1 keeps XLA's defaults.
#
# Tests that claim XLA's own numerics as users compile (bit-equality of two programs, a bound of
# a few ULP against another framework's values or against XLA's own op) are marked
# `xla_default` (the elemental emitters lack complex ordering and a boolean clamp, and round
# some functions otherwise): under the settings above they are deselected, and `make test`
# runs them in a tier of their own at XLA's defaults (HLOPIPE_TEST_XLA_OPT=1), then once more
# at another vector width (on x86-64, --xla_cpu_max_isa=AVX2) together with the tests marked
# `numeric`, whose tolerances are the tightest of the suite. How many ULP a kernel loses
# depends on the processor, on LLVM's optimisation and on the emitter, so such a claim is
# checked where it is made, on the widths it is made for.
if os.environ.get("HLOPIPE_TEST_XLA_OPT") != "1":
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + " --xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
    ).strip()

import jax  # XLA reads XLA_FLAGS when its first backend starts
import pytest

jax.config.update("jax_num_cpu_devices", 8)
XLA_DEFAULT = os.environ.get("HLOPIPE_TEST_XLA_OPT") == "1"


_AT_DEFAULT = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "x64: run the test with jax_enable_x64 on")


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if n := config.stash.get(_AT_DEFAULT, 0):
        terminalreporter.write_line(
            f"{n} tests marked xla_default deselected: they run at XLA's default settings "
            "(HLOPIPE_TEST_XLA_OPT=1 pytest -m xla_default; make test does)"
        )


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


# The heavy modules, marked `slow` as a whole so that `make test-fast` (the suite without the
# slow, multi-process and 16-device tests) stays an inner loop of a few minutes; `make test`
# runs everything. A test elsewhere that takes more than a few seconds idle carries
# @pytest.mark.slow itself.
SLOW_MODULES = frozenset(
    {
        "conformance/test_conformance.py",
        "decompile/test_decompile_cli.py",
        "decompile/test_decompile_frameworks.py",
        "decompile/test_decompile_zoo.py",
        "rehydrate/test_collectives.py",
        "rehydrate/test_frameworks.py",
        "rehydrate/test_models.py",
        "rehydrate/test_spec_sweep.py",
        "rehydrate/test_spmd.py",
        "runtime/test_launch.py",
        "runtime/test_launch_loopback.py",
        "runtime/test_launch_steps.py",
        "runtime/test_mesh.py",
        "runtime/test_new_schedules.py",
        "runtime/test_optimizers.py",
        "runtime/test_pipeline.py",
        "runtime/test_pipeline_configs.py",
        "runtime/test_process_takeover.py",
        "stages/test_autodiff_hlo.py",
        "stages/test_sharding.py",
        "test_cli.py",
        "test_cli_firsthour.py",
        "test_docs_examples.py",
        "test_fuzz.py",
        "stages/test_cli.py",
        "generate/test_generate.py",
        "generate/test_generate_cli.py",
        "generate/test_generate_docs.py",
        "runtime/test_layer_loops.py",
        "runtime/test_step_protocol.py",
        "stages/test_layer_loops.py",
    }
)
# Single heavy tests of otherwise quick modules (tens of seconds each on a loaded machine),
# as `module::test`, every parametrisation of it.
SLOW_TESTS = frozenset(
    {
        "rehydrate/ops/test_elementwise.py::test_against_xla",
        "rehydrate/ops/test_elementwise.py::test_grad_and_vmap",
        "rehydrate/ops/test_linalg.py::test_lapack_qr_custom_calls_differentiate",
        "rehydrate/ops/test_linalg.py::test_xla_qr_custom_calls_match_and_differentiate",
        "rehydrate/ops/test_linalg.py::test_xla_qr_eigh_custom_calls",
        "rehydrate/ops/test_random.py::test_jax_random_programs",
        "rehydrate/ops/test_sort.py::test_general_comparator_gradient_network",
        "rehydrate/ops/test_windowed.py::test_cnn_pipeline_values_grad_vmap",
        "rehydrate/ops/test_windowed.py::test_pooling_gradient_program_rehydrates",
        "stages/test_files.py::test_merge_then_split_on_2x2_meshes_equals_value_and_grad",
        "stages/test_split.py::test_auto_split_24_layers_cuts_between_layers",
        "stages/test_split.py::test_mlp_chained_grads",
        "stages/test_split.py::test_transformer_chained_grads",
        "stages/test_split.py::test_transformer_tied_embedding_and_skip",
    }
)


# The modules whose tolerances are the tightest of the suite (a few ULP against JAX or numpy):
# marked `numeric`, so that `make test` runs them once more at another vector width (AVX2), with
# the `xla_default` tests (about a minute of CPU).
NUMERIC_MODULES = frozenset(
    {
        "generate/test_torch_xla_decode.py",
        "rehydrate/ops/test_chlo.py",
        "rehydrate/ops/test_linalg.py",
        "rehydrate/ops/test_normalization.py",
        "rehydrate/ops/test_slicing.py",
        "rehydrate/ops/test_sort.py",
        "rehydrate/test_interpreter.py",
        "rehydrate/test_safe_grad.py",
        "rehydrate/test_x64.py",
    }
)


# The longest tests (tens of seconds to minutes each in `make test`'s profile), longest first:
# they run first, so that under `-n 2` no long test starts near the end while the other worker
# has nothing left (pytest-xdist hands the tests out in this order). `module::test`, every
# parametrisation of it; the rest keep their order.
LONGEST_FIRST = (
    "conformance/test_conformance.py::test_stablehlo_testdata_suite",
    "runtime/test_launch_spanning.py::test_spanning_stage_meshes_train_and_infer_like_one_device",
    "runtime/test_checkpoint_processes.py::test_saved_by_4_processes_restores_onto_2_processes_and_onto_one",
    "runtime/test_multiprocess.py::test_processes_train_and_infer_like_one_device",
    "test_docs_examples.py::test_parallelism_worked_example",
    "runtime/test_mesh.py::test_16_devices_4_stages_of_2x2_meshes_train_like_one_device",
    "runtime/test_multiprocess_failures.py::test_killed_process_is_named_by_every_other",
    "runtime/test_multiprocess_checkpoint.py::test_save_kill_restore_gives_uninterrupted_losses",
    "runtime/test_launch_local.py::test_pipelines_on_some_processes_check_finite_and_zb_v_spanning",
    "generate/test_generate_launch.py::test_a_process_dying_mid_generation_is_named",
    "generate/test_generate_spanning.py::test_stages_spanning_processes_generate_the_unsplit_programs_tokens",
    "runtime/test_checkpoint_processes.py::test_a_cut_layer_loop_saved_by_2_processes_restores_onto_one",
    "test_cli_firsthour.py::test_train_defaults_check_save_resume",
    "test_cli.py::test_demo",
    "generate/test_generate_launch.py::test_two_processes_generate_the_same_tokens_as_the_unsplit_program",
    "runtime/test_multiprocess.py::test_2_processes_x_8_devices_of_2x2_stage_meshes_train_like_one_device",
    "runtime/test_layer_loops.py::test_checkpoint_stores_stacked_parameters_whole_and_restores_onto_other_splits",
    "test_training_launch.py::test_replicas_across_processes_read_disjoint_samples_and_train_like_one",
    "test_docs_examples.py::test_training_page_end_to_end",
    "serve/test_serve_launch.py::test_two_processes_serve_greedy_completions_equal_the_unsplit_program",
    "generate/test_generate_docs.py::test_readme_generation_example",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not XLA_DEFAULT:  # claims of XLA's default numerics run in their own tier (see above)
        keep = [item for item in items if item.get_closest_marker("xla_default") is None]
        if len(keep) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in keep])
            config.stash[_AT_DEFAULT] = len(items) - len(keep)
            items[:] = keep
    here = Path(__file__).resolve().parent
    first = {name: n for n, name in enumerate(LONGEST_FIRST)}
    rank: dict[str, int] = {}
    for item in items:
        module = item.path.relative_to(here).as_posix()
        name = getattr(item, "originalname", item.name)
        if module in SLOW_MODULES or f"{module}::{name}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if module in NUMERIC_MODULES:
            item.add_marker(pytest.mark.numeric)
        rank[item.nodeid] = first.get(f"{module}::{name}", len(first))
    items.sort(key=lambda item: rank[item.nodeid])  # stable: the others keep their order

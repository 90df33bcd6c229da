PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lock demo test test-numerics test-fast test-multiprocess test-mesh lint typecheck check bench fixtures probe clean

$(BIN)/python:
	$(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

# Exact versions from the lock file (constraints.txt); `make demo` installs hlopipe, its runtime
# needs and what the demo draws with, `make test` adds every extra and the test tools.
DEMO_STAMP := $(VENV)/.installed-demo
EXTRAS := test,plot,data,serve

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install -c constraints.txt -e ".[$(EXTRAS)]"
	touch $(STAMP)

$(DEMO_STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install -c constraints.txt -e ".[plot]"
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/hlopipe demo

# Writes constraints.txt anew from the venv (after changing pyproject.toml's dependencies).
lock: $(STAMP)
	{ sed -n '1,/^$$/p' constraints.txt; \
	  $(BIN)/python -m pip freeze --exclude-editable | LC_ALL=C sort -f; } > constraints.new
	mv constraints.new constraints.txt

# The 25 slowest tests are listed at the end (what to trim when the suite nears 20 min idle).
# Three tiers (tests/conftest.py): the suite at LLVM's O0 with XLA's elemental emitters
# (compiles fast); the tests that claim XLA's default numerics (bit-equality, ULP bounds) at its
# defaults; on x86-64 those and the tightest tolerances once more at the AVX2 vector width,
# where AVX-512 rounds otherwise.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --durations=25 tests
	$(MAKE) --no-print-directory test-numerics

test-numerics: $(STAMP)
	HLOPIPE_TEST_XLA_OPT=1 $(BIN)/python -m pytest -q -n 2 -m xla_default tests
	if [ "$$(uname -m)" = x86_64 ]; then \
	  HLOPIPE_TEST_XLA_OPT=1 XLA_FLAGS=--xla_cpu_max_isa=AVX2 \
	    $(BIN)/python -m pytest -q -n 2 -m "xla_default or numeric" tests; fi

# The inner loop: the suite without the slow modules and tests (tests/conftest.py), the
# multi-process and the 16-device ones; a few minutes. `make test` stays the full suite.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not slow and not multiprocess and not devices16" tests

# Only the 16-device pipeline x data x tensor configurations (make test runs them too).
test-mesh: $(STAMP)
	$(BIN)/python -m pytest -q -p no:xdist -m devices16 tests

# Only the multi-process (jax.distributed) tests, which `make test` runs too.
test-multiprocess: $(STAMP)
	$(BIN)/python -m pytest -q -p no:xdist -m multiprocess tests

lint: $(STAMP)
	$(BIN)/ruff check hlopipe tests benchmarks scripts
	$(BIN)/ruff format --check hlopipe tests benchmarks scripts

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

bench: $(STAMP)
	for f in benchmarks/*.py; do $(BIN)/python $$f || exit 1; done

# Regenerate tests/data/frameworks/ (not part of `make test`): TensorFlow and PyTorch/XLA
# fixtures, each generator in a venv of its own (big downloads, made on first use), XLA-style
# HLO with jaxlib, then every program run with XLA directly against its stored values.
fixtures: $(STAMP)
	$(BIN)/python scripts/fixtures/xla_style.py
	$(BIN)/python scripts/fixtures/jax_programs.py
	$(PY) scripts/fixtures/tensorflow_models.py || python3 scripts/fixtures/tensorflow_models.py
	$(PY) scripts/fixtures/tensorflow_loops.py || python3 scripts/fixtures/tensorflow_loops.py
	$(PY) scripts/fixtures/torch_xla_models.py || python3 scripts/fixtures/torch_xla_models.py
	$(PY) scripts/fixtures/torch_xla_decode.py || python3 scripts/fixtures/torch_xla_decode.py
	$(PY) scripts/fixtures/torch_xla_loops.py || python3 scripts/fixtures/torch_xla_loops.py
	$(PY) scripts/fixtures/torch_xla_hf_static.py || python3 scripts/fixtures/torch_xla_hf_static.py
	$(PY) scripts/fixtures/hf_export_generation.py || python3 scripts/fixtures/hf_export_generation.py
	$(PY) scripts/fixtures/hf_export_chunk.py || python3 scripts/fixtures/hf_export_chunk.py
	$(PY) scripts/fixtures/keras_hub_generate.py || python3 scripts/fixtures/keras_hub_generate.py
	$(BIN)/python scripts/fixtures/check_with_xla.py

# The XLA-style corpus (scripts/probe_corpus/) in full, each case through hlopipe against XLA
# running the same text (values, gradients by finite differences), one child process per case;
# prints a status per case and a count per status (minutes). `make fixtures` writes the cases
# marked "fixture" to tests/data/frameworks/xla/.
probe: $(STAMP)
	$(BIN)/python scripts/xla_style_probe.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache

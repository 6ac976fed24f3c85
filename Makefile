# streamband: `make demo` runs the main job, `make test` runs every test.
# Both install what they need into .venv first (Debian's python3 with system
# site-packages, so that Mininet from apt is importable for the testbed). `make test` also
# installs, as root, the Debian packages of the real backends (scripts/system-packages.sh,
# which CI runs too) and builds Storm's and Kafka's homes; `make demo` needs neither.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BASEPY := $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)
OUT    ?= out
# rustup's cargo builds the compiled cores (rust/coflow_core, rust/alloc_core; PyO3 + maturin)
export PATH := $(HOME)/.cargo/bin:$(PATH)
RUST   := rust/coflow_core/Cargo.toml rust/coflow_core/pyproject.toml $(wildcard rust/coflow_core/src/*.rs) \
          rust/alloc_core/Cargo.toml rust/alloc_core/pyproject.toml $(wildcard rust/alloc_core/src/*.rs)

.PHONY: demo test lint docs install clean system homes

$(STAMP): pyproject.toml $(RUST)
	$(BASEPY) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q ./rust/coflow_core
	$(PY) -m pip install -q ./rust/alloc_core
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/streamband bench paper-001 --out $(OUT)/paper-001
	@echo "report: $(OUT)/paper-001/report.html"

# as root, the Debian packages (only what is missing); without root, one line: what is
# skipped, and how to get it
system:
	bash scripts/system-packages.sh

# Storm's and Kafka's homes (Maven Central's jars, cached; streamband's jars built), as CI
# builds them before the tests; without Java and Maven their tests are skipped, not failed
homes: system $(STAMP)
	@if command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
	  $(PY) -m streamband.storm.home && $(PY) -m streamband.kafka.home; \
	else \
	  echo "Storm's and Kafka's homes not built: no Java 17 and Maven; their tests are" \
	       "skipped; to run them: sudo make test"; \
	fi

test: homes $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache src tests perf
	$(VENV)/bin/lint-imports
	$(PY) -m streamband.docs docs --check
	for crate in rust/*/; do (cd $$crate && cargo clippy -q --release -- -D warnings) || exit 1; done

docs: $(STAMP)
	$(PY) -m streamband.docs docs

clean:
	rm -rf $(OUT) .pytest_cache build

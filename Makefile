# streamband: `make demo` runs the main job, `make test` runs every test.
# Both install what they need into .venv first (Debian's python3 with system
# site-packages, so that Mininet from apt is importable for the testbed).
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BASEPY := $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)
OUT    ?= out

.PHONY: demo test lint install clean

$(STAMP): pyproject.toml
	$(BASEPY) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/streamband bench paper-001 --out $(OUT)/paper-001
	@echo "report: $(OUT)/paper-001/report.html"

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench

clean:
	rm -rf $(OUT) .pytest_cache build

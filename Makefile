# Two entry points: `make demo` runs the main job on the embedded default (local store,
# SQLite MLflow, ephemeral Prefect); `make test` runs the whole test suite.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | sha256sum | cut -c1-12)

.PHONY: demo test install clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ratchet demo

test: $(STAMP)
	$(VENV)/bin/pytest

clean:
	rm -rf $(VENV) .ratchet .pytest_cache

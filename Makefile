# Two entry points: `make demo` runs the main job on the embedded default (local store,
# SQLite MLflow, ephemeral Prefect); `make test` runs the whole test suite. `make llm`
# adds a real local model (the optional [llm] extra and the pinned 0.5B GGUF), `make
# test-llm` runs the tests against it (marked `llm`, left out of `make test`).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | sha256sum | cut -c1-12)

# A prebuilt llama-cpp-python wheel (../shared/wheels on the project's machines and CI);
# without one, pip builds llama.cpp from the official source (15-50 minutes).
RATCHET_WHEELS ?= $(if $(wildcard ../shared/wheels/*.whl),$(abspath ../shared/wheels),)

.PHONY: demo test install clean llm test-llm

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ratchet demo

test: $(STAMP)
	$(VENV)/bin/pytest

llm: $(STAMP)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -c requirements.lock \
		$(if $(RATCHET_WHEELS),--find-links $(RATCHET_WHEELS)) -e '.[dev,llm]'
	$(VENV)/bin/ratchet llm fetch qwen2.5-coder-0.5b

test-llm: llm
	$(VENV)/bin/pytest -m llm

clean:
	rm -rf $(VENV) .ratchet .pytest_cache

# The two commands (README): `make run` and `make test`. Both create .venv and install what
# they need on a fresh machine; the stamp re-installs only when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck layers pytest chromium bench clean

# The browser tests (tests/browser/) drive Debian's chromium, headless. It is installed when
# missing (as root, or with password-less sudo); when it cannot be, those tests skip and say why.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo -n)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/voicegate serve --config config/voicegate.yml

test: lint typecheck layers pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict voicegate

layers: $(STAMP)
	$(BIN)/lint-imports

pytest: $(STAMP) chromium
	$(BIN)/pytest -rs

chromium:
	@test -x $(CHROMIUM) || { echo "installing chromium for tests/browser (apt-get)"; \
	  $(SUDO) sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq chromium >/dev/null'; } || \
	  echo "chromium could not be installed; tests/browser will be skipped"

bench: $(STAMP)
	$(BIN)/python bench/audio_path.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

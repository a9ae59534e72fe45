# The two commands (README): `make run` and `make test`. Both create .venv and install what
# they need on a fresh machine; the stamp re-installs only when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck layers pytest chromium redis bench clean

# The browser tests (tests/browser/) drive Debian's chromium, headless. It is installed when
# missing (as root, or with password-less sudo); when it cannot be, those tests skip and say why.
CHROMIUM := /usr/bin/chromium
# The Redis store tests (issue 13) start Debian's redis-server on a free loopback port each;
# it is installed when missing, like chromium, and those tests skip and say why if it cannot be.
REDIS_SERVER := /usr/bin/redis-server
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

pytest: $(STAMP) chromium redis
	$(BIN)/pytest -rs

chromium:
	@test -x $(CHROMIUM) || { echo "installing chromium for tests/browser (apt-get)"; \
	  $(SUDO) sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq chromium >/dev/null'; } || \
	  echo "chromium could not be installed; tests/browser will be skipped"

redis:
	@test -x $(REDIS_SERVER) || { echo "installing redis-server for the Redis store tests (apt-get)"; \
	  $(SUDO) sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq redis-server >/dev/null'; } || \
	  echo "redis-server could not be installed; the Redis store tests will be skipped"

bench: $(STAMP)
	$(BIN)/python bench/audio_path.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

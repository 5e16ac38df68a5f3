# One-command set-up: every target creates the virtual environment when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= quick
EXECUTOR ?= local
GAMES ?=
STAMP := $(VENV)/.installed
export MASK_A3C_OFFICIAL_DIR ?= $(CURDIR)/data/external/mask_a3c_official

.PHONY: env test book book-assets demo fetch-official lint clean

env: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev,book,captum,ray]'
	touch $(STAMP)

## fetch-official: copy (MASK_A3C_OFFICIAL_SRC=dir) or download the official Mask-A3C checkpoints
fetch-official: $(STAMP)
	$(PY) -m saliency_lib fetch-official --dest $(MASK_A3C_OFFICIAL_DIR)

## test: the whole test suite
test: $(STAMP)
	@if [ -n "$$MASK_A3C_OFFICIAL_SRC" ]; then $(MAKE) --no-print-directory fetch-official; fi
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check saliency_lib tests benchmarks

## demo: load an agent, play, write a GIF with its attention masks
demo: fetch-official
	mkdir -p build
	$(PY) -m saliency_lib evaluate official:Breakout --episodes 1 --seed 0 --max-steps 1500 --gif build/breakout_masks.gif --mask-display sig5

## book: execute the chapters (papermill, PROFILE=quick|full|tiny; GAMES=MsPacman,... adds game pages) and build book/_build/html
book: $(STAMP)
	@if [ -n "$$MASK_A3C_OFFICIAL_SRC" ]; then $(MAKE) --no-print-directory fetch-official; fi
	$(PY) -m saliency_lib book --profile $(PROFILE) --executor $(EXECUTOR) $(if $(GAMES),--games $(GAMES))

## book-assets: fetch the book's offline JavaScript (npm pack, once) into book/_offline
book-assets: $(STAMP)
	$(PY) -m saliency_lib book --assets-only

clean:
	rm -rf build book/_build book/_offline book/chapters

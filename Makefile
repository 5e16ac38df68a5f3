# One-command set-up: every target creates the virtual environment when it is missing.
# The lock (requirements.lock) is for CPython 3.11, so that is the default interpreter.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || echo python3)
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= quick
EXECUTOR ?= local
GAMES ?=
STAMP := $(VENV)/.installed
LOCK := requirements.lock
# torch's CPU build (torch==2.13.0+cpu in the lock) is not on PyPI, whose torch is the CUDA
# build (GBs of nvidia-* packages). pip and uv look for it here: PIP_FIND_LINKS when set
# (a local wheel directory), otherwise PyTorch's page of CPU wheels.
TORCH_FIND_LINKS ?= $(or $(PIP_FIND_LINKS),https://download.pytorch.org/whl/cpu/torch/)
FIND_LINKS := $(foreach f,$(TORCH_FIND_LINKS),--find-links $(f))
# Install with uv (the lock's version, bootstrapped with pip; much faster); USE_UV=0: plain pip.
USE_UV ?= 1
UV := $(VENV)/bin/uv
BOOK_HTML := book/_build/html
export MASK_A3C_OFFICIAL_DIR ?= $(CURDIR)/data/external/mask_a3c_official

.PHONY: env lock test book book-assets pdf publish demo fetch-official lint clean

env: $(STAMP)

## env: the virtual environment, exactly the lock's versions, then the project itself (editable, no dependencies)
$(STAMP): $(LOCK) pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c 'import sys; sys.version_info[:2] == (3, 11) or print("warning: $(LOCK) is for Python 3.11, $(PY) is", sys.version.split()[0])'
	@$(PY) scripts/lock.py --check > /dev/null 2>&1 || echo "warning: pyproject.toml's dependencies changed since $(LOCK) was made; installing the old lock (run: make lock)"
	@if [ "$(USE_UV)" != 0 ] && { test -x $(UV) || $(PY) -m pip install --quiet "$$(grep -m1 '^uv==' $(LOCK))"; }; then \
	  set -x; \
	  $(UV) pip sync --quiet --python $(PY) $(FIND_LINKS) $(LOCK) && \
	  $(UV) pip install --quiet --python $(PY) --no-deps -e . ; \
	else \
	  set -x; \
	  $(PY) -m pip install --quiet --no-deps $(FIND_LINKS) -r $(LOCK) && \
	  $(PY) -m pip install --quiet --no-deps -e . ; \
	fi
	touch $(STAMP)

## lock: regenerate requirements.lock from pyproject.toml with uv (keeps the pins it can; UPGRADE=1 moves them all)
lock:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(PY) -m pip install --quiet uv
	$(PY) scripts/lock.py --uv $(UV) --find-links $(TORCH_FIND_LINKS) $(if $(UPGRADE),--upgrade)

## fetch-official: copy (MASK_A3C_OFFICIAL_SRC=dir) or download the official Mask-A3C checkpoints
fetch-official: $(STAMP)
	$(PY) -m saliency_lib fetch-official --dest $(MASK_A3C_OFFICIAL_DIR)

## test: the whole test suite
test: $(STAMP)
	@if [ -n "$$MASK_A3C_OFFICIAL_SRC" ]; then $(MAKE) --no-print-directory fetch-official; fi
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check saliency_lib saliency_study saliency_book tests benchmarks scripts

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

## pdf: the book as one PDF, book/_build/book.pdf: Jupyter Book's single-page HTML of the executed
## chapters, printed by headless Chromium (Debian's chromium; installed when missing and root)
pdf: book
	$(VENV)/bin/jupyter-book build book --builder singlehtml --keep-going --quiet $(if $(or $(GAMES),$(filter full,$(PROFILE))),--toc book/_build/_toc.games.yml)
	profile=$$(mktemp -d) && \
	  "$$($(PY) -c 'from saliency_book.builder.browser import ensure_chromium; print(ensure_chromium())')" \
	  --headless --no-sandbox --disable-gpu --user-data-dir="$$profile" --no-pdf-header-footer \
	  --virtual-time-budget=60000 --print-to-pdf=book/_build/book.pdf "file://$(CURDIR)/book/_build/singlehtml/intro.html" && \
	  rm -rf "$$profile"
	@echo "wrote book/_build/book.pdf"

## publish: build the book, then commit its HTML onto the local gh-pages branch with ghp-import (never pushes)
publish: book
	touch $(BOOK_HTML)/.nojekyll
	$(VENV)/bin/ghp-import --no-jekyll --branch gh-pages --message "Book built from $$(git rev-parse --short HEAD)" $(BOOK_HTML)
	@echo "gh-pages now holds $(BOOK_HTML); publish it with: git push origin gh-pages"

clean:
	rm -rf build book/_build book/_offline book/chapters

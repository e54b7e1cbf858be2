# The two commands of the README: both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	# Bytecode for the project's own modules now: where PYTHONDONTWRITEBYTECODE is set (CI), every
	# daemon, client and sandbox process would otherwise compile them again (about 0.6 s each).
	$(BIN)/python -m compileall -q -j 0 actors cli config control conversation markup messages providers store supervisor.py tools
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/hermes-actors demo

# worksteal: each worker starts on a contiguous half of the suite and an idle worker takes half of the other's
# queue. The default 'load' refills each worker from the common front (a module whose shared daemon, provider
# or jail then starts on both workers wherever a refill splits it) and keeps a few tests queued per worker
# that the other cannot take, so a slow test with tests queued behind it leaves the other worker idle.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist worksteal

bench: $(STAMP)
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info

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

# worksteal: each worker starts on a contiguous half of the suite (a module's shared daemon, provider or jail
# is set up once, not on both workers as the default round-robin hand-out does) and an idle worker takes half
# of the other's queue, so a slow test near the end leaves no tail.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist worksteal

bench: $(STAMP)
	for f in bench/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info

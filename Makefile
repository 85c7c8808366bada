# Every target creates .venv from scratch when it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SEEDS  ?= 200

.PHONY: test demo bench lint sim mutate clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Tests run on two workers (pytest-xdist); a module's tests that share an expensive
# fixture are kept on one worker by an xdist_group mark.
XDIST  ?= -n 2 --dist loadgroup
# The loop-facing tests of the uvloop pass mostly wait on sockets, timers and processes
# (the CPU about a third busy on two workers): four workers.
XDIST_LOOP ?= -n 4 --dist loadgroup

test: $(STAMP)
	# The tests start many Python processes (nodes, the CLI, the simulator): compiled once
	# here, the sources are not compiled again at each start where PYTHONDONTWRITEBYTECODE
	# is set (about 0.3 s of CPU a start).
	$(BIN)/python -m compileall -q lazily_queue transports simulator benchmarks examples
	$(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST)
	# Again on uvloop: the loop-facing tests (the links, the Raft driver, clients, the web
	# integrations), where the loop's sockets, timers, TLS and threads are used; the cells,
	# the corpus and the brokers run the same loop calls through them.
	LAZILY_TEST_LOOP=uvloop $(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST_LOOP) -m "not slow" \
		tests/transports tests/raft tests/client tests/integrations tests/threads

demo: $(STAMP)
	$(BIN)/lazily-queue demo $(if $(TRANSPORT),--transport $(TRANSPORT))

sim: $(STAMP)
	PYTHONHASHSEED=0 $(BIN)/python -m simulator --seeds $(SEEDS)

mutate: $(STAMP)
	$(BIN)/python tests/mutate.py

bench: $(STAMP)
	$(BIN)/python benchmarks/local_queue.py

lint: $(STAMP)
	$(BIN)/ruff check lazily_queue transports simulator tests benchmarks examples build_support
	$(BIN)/mypy
	# The examples and the README's Python blocks as a user's code: checked against the
	# package's types (py.typed).
	$(BIN)/mypy examples
	$(BIN)/python -m build_support.readme_types

clean:
	rm -rf $(VENV) .lazily-demo .mypy_cache .ruff_cache

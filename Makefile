# `make demo` and `make test` create .venv on first use (pip takes torch from the local disk).
# The verl extra is installed too: the verl integration test runs in `make test`.
PY      := .venv/bin/python
STAMP   := .venv/.installed

.PHONY: demo test venv clean bench

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -e '.[dev,verl]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	.venv/bin/paravt demo --out runs/demo

test: $(STAMP)
	$(PY) -m pytest tests --timeout=900

bench: $(STAMP)
	$(PY) benchmarks/video_decode.py
	$(PY) benchmarks/dispatch.py
	$(PY) benchmarks/train_step.py
	$(PY) benchmarks/tool_server_load.py

clean:
	rm -rf runs .pytest_cache

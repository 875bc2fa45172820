# `make demo` and `make test` create .venv on first use (pip takes torch from the local disk).
# The verl extra is installed too: the verl integration test runs in `make test`.
PY      := .venv/bin/python
STAMP   := .venv/.installed

.PHONY: demo test venv clean bench sandbox-deps

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -e '.[dev,verl]'
	touch $(STAMP)

venv: $(STAMP)

# The python tool refuses to run without bubblewrap: install it when we can (root or sudo, apt),
# never fail the target when we cannot (the sandbox tests then say so in pytest's skip summary).
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || \
	  (if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
	   $$SUDO apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	   ($$SUDO apt-get update -qq >/dev/null 2>&1 && $$SUDO apt-get install -y -qq bubblewrap >/dev/null 2>&1)) || \
	  echo "WARNING: bubblewrap (bwrap) could not be installed: the python tool's sandbox tests will be SKIPPED"

demo: $(STAMP) sandbox-deps
	.venv/bin/paravt demo --out runs/demo

test: $(STAMP) sandbox-deps
	$(PY) -m pytest tests -rs --timeout=900

bench: $(STAMP)
	$(PY) benchmarks/video_decode.py
	$(PY) benchmarks/dispatch.py
	$(PY) benchmarks/train_step.py
	$(PY) benchmarks/tool_server_load.py

clean:
	rm -rf runs .pytest_cache

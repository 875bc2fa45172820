"""Real-server tests (marked ``real_server``) run only with ``--real-servers`` (``make
test-servers``, which first creates ``.venv-vllm``); with the option they FAIL when the venv is
missing instead of passing vacuously."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--real-servers"):
        return
    skip = pytest.mark.skip(reason="needs a real vLLM: run `make test-servers`")
    for item in items:
        if "real_server" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def vllm_python() -> str:
    exe = ROOT / ".venv-vllm" / "bin" / "python"
    if not exe.is_file():
        pytest.fail(f"{exe} is missing: `make test-servers` creates it")
    return str(exe)

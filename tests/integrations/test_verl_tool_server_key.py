"""The verl agent loop reaches a keyed tool server with ``rollout.tool_server_key_file`` (issue 34
item 7): a real `paravt serve-tools` app on 127.0.0.1, the config loaded from YAML as each verl
worker loads it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl is not installed (pip install -e '.[verl]')")

import paravt.integrations.verl.agent_loop as paravt_loop  # noqa: E402
from paravt.config import ToolServerConfig  # noqa: E402
from paravt.errors import ConfigError  # noqa: E402
from paravt.tools.server.app import create_app  # noqa: E402
from paravt.tools.server.client import RemoteToolSet  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from server_helpers import ServerThread  # noqa: E402


def test_the_agent_loops_toolset_sends_the_key_file_of_its_config(tmp_path: Path) -> None:
    key = "verl-" + "w" * 40
    (tmp_path / "tools.key").write_text(key + "\n")
    app = create_app(
        ["crop_video"],
        ToolServerConfig(video_roots=[str(tmp_path)], api_key_file=str(tmp_path / "tools.key")),
    )
    with ServerThread(app) as srv:
        for name, key_line in (
            ("keyed", f"  tool_server_key_file: {tmp_path / 'tools.key'}\n"),
            ("bare", ""),
        ):
            (tmp_path / f"{name}.yaml").write_text(
                f"rollout:\n  tool_server_url: {srv.url}\n{key_line}"
            )
        keyed = paravt_loop.rollout_toolset(paravt_loop._load_config(str(tmp_path / "keyed.yaml")))
        with pytest.raises(ConfigError, match="refused the key") as refused:
            paravt_loop.rollout_toolset(paravt_loop._load_config(str(tmp_path / "bare.yaml")))
    assert isinstance(keyed, RemoteToolSet) and [s.name for s in keyed.specs] == ["crop_video"]
    assert key not in str(refused.value)

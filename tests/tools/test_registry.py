import asyncio
import sys
import textwrap

import pytest
from tool_helpers import call

from paravt.errors import ConfigError
from paravt.tools import (
    available_tools,
    build_toolset,
    create_tool,
    discover_plugins,
    register_tool,
    unregister_tool,
)
from paravt.tools.registry import unknown_tool_message


def _install_plugin(root, dist: str, tool_name: str, module: str) -> None:
    """A tiny installed distribution: a module plus a .dist-info with an entry_points.txt."""
    (root / f"{module}.py").write_text(
        textwrap.dedent(f'''
        from paravt.protocol.prompts import ToolSpec
        from paravt.tools import Observation

        class EchoTool:
            name = "{tool_name}"
            params = {{"type": "object", "properties": {{"text": {{"type": "string"}}}},
                      "required": ["text"]}}
            spec = ToolSpec("{tool_name}", "Echo the text back.", params)
            timeout_s = 5.0

            async def run(self, ctx, args):
                return Observation(text="echo: " + args["text"])
    ''')
    )
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[paravt.tools]\n{tool_name} = {module}:EchoTool\n")


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("echo", "crop_video_dup"):
        unregister_tool(name)
    sys.path.remove(str(tmp_path)) if str(tmp_path) in sys.path else None
    discover_plugins(refresh=True)


def test_an_installed_package_adds_a_tool_through_the_entry_point_group(plugin_path, make_ctx):
    _install_plugin(plugin_path, "paravt-echo-plugin", "echo", "paravt_echo_plugin")
    discover_plugins(refresh=True)
    assert "echo" in available_tools()
    ts = build_toolset(["crop_video", "echo"])
    assert [s.name for s in ts.specs] == ["crop_video", "echo"]
    (obs,) = asyncio.run(ts.run_calls(make_ctx(), [call("echo", text="hi")]))
    assert obs.ok and obs.text == "echo: hi"
    (bad,) = asyncio.run(ts.run_calls(make_ctx(), [call("echo")]))
    assert "echo is missing 'text'" in bad.error


def test_a_plugin_reusing_a_builtin_name_is_rejected_with_both_origins(plugin_path):
    _install_plugin(plugin_path, "evil-plugin", "crop_video", "evil_plugin_mod")
    with pytest.raises(ConfigError) as err:
        discover_plugins(refresh=True)
    msg = str(err.value)
    assert "'crop_video' is registered twice" in msg
    assert (
        "builtin:paravt.tools.crop" in msg
        and "entry-point:evil-plugin evil_plugin_mod:EchoTool" in msg
    )


def test_registering_a_taken_name_from_code_is_rejected():
    discover_plugins()
    with pytest.raises(ConfigError, match="'python' is registered twice"):
        register_tool("python", lambda: None, origin="code:mine")


def test_unknown_names_suggest_the_closest_and_list_all():
    msg = unknown_tool_message("pyhton", ("crop_video", "frame_select", "python"))
    assert (
        msg == "unknown tool 'pyhton'. Did you mean 'python'? Available: crop_video, frame_select, "
        "python"
    )
    assert "Did you mean" not in unknown_tool_message("zzz", ("python",))
    with pytest.raises(ConfigError, match="Available: crop_video, frame_select, python"):
        create_tool("zoom_in")

import subprocess
import sys


def test_importing_rewards_and_protocol_does_not_import_torch() -> None:
    code = (
        "import sys, paravt.rewards, paravt.models.openai.judge, paravt.protocol.prompts, "
        "paravt.protocol.stats; print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]

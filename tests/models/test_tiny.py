"""Tiny offline checkpoints: build, save, load through the same path as a real checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from paravt.cli import app as cli_app
from paravt.data.synth.corpus import protocol_corpus
from paravt.errors import ModelError
from paravt.models.hf.loading import accelerator_attention, load_policy
from paravt.models.tiny import SIZES, build_tiny


@pytest.mark.parametrize(
    "family,cls",
    [
        ("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration"),
        ("qwen3_vl", "Qwen3VLForConditionalGeneration"),
    ],
)
def test_tiny_checkpoint_loads_with_auto_classes_and_matching_token_ids(
    family, cls, loaded_policy
) -> None:
    p = loaded_policy(family)
    assert type(p.model).__name__ == cls and p.family == family
    cfg, tok = p.model.config, p.tokenizer
    assert cfg.video_token_id == tok.convert_tokens_to_ids("<|video_pad|>")
    assert cfg.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>")
    assert cfg.vision_start_token_id == tok.convert_tokens_to_ids("<|vision_start|>")
    assert cfg.text_config.vocab_size == len(tok)
    assert cfg.text_config.hidden_size == SIZES["xs"].hidden
    assert p.model.generation_config.eos_token_id == tok.convert_tokens_to_ids("<|im_end|>")


def test_tokenizer_keeps_protocol_numbers_and_phrases_short(loaded_policy) -> None:
    tok = loaded_policy("qwen3_vl").tokenizer
    call = (
        '<tool_call>\n{"name": "crop_video", "arguments": {"start_time": 30, "end_time": '
        "60}}\n</tool_call>"
    )
    n_call = len(tok(call, add_special_tokens=False)["input_ids"])
    n_bytes = len(call.encode())
    assert n_call < n_bytes / 2.5, (n_call, n_bytes)  # trained merges, not raw bytes
    # a think's fixed sentence (paravt.data.synth.oracle.ASKS) is a few merged tokens, not 33 bytes
    assert len(tok("The question asks for the colour.", add_special_tokens=False)["input_ids"]) <= 4


def test_cli_builds_a_checkpoint_and_info_describes_it(tmp_path: Path) -> None:
    out = tmp_path / "m"
    cmd = [sys.executable, "-m", "paravt.cli.model"]
    run = subprocess.run(
        [*cmd, "tiny", "--family", "qwen2_5_vl", "--size", "xs", "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    built = json.loads(run.stdout.strip().splitlines()[-1])
    result = CliRunner().invoke(
        cli_app, ["model", "info", str(out), "--json"]
    )  # in-process: one import less
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    assert facts["family"] == "qwen2_5_vl"
    assert facts["num_params"] == built["num_params"] and facts["vocab_size"] == built["vocab_size"]


def test_same_seed_builds_identical_weights(tmp_path: Path) -> None:
    a = build_tiny("qwen3_vl", "xs", tmp_path / "a", corpus=protocol_corpus(seed=3), seed=3)
    b = build_tiny("qwen3_vl", "xs", tmp_path / "b", corpus=protocol_corpus(seed=3), seed=3)
    ma, mb = load_policy(a.path).model, load_policy(b.path).model
    assert all(
        torch.equal(x, y) for x, y in zip(ma.state_dict().values(), mb.state_dict().values())
    )


def test_loading_a_missing_checkpoint_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="paravt model tiny"):
        load_policy(str(tmp_path / "nothing-here"))


def test_unknown_size_is_rejected_with_choices(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="xs, s, m"):
        build_tiny("qwen3_vl", "xl", tmp_path, corpus=protocol_corpus())


def test_new_models_get_the_protocol_tokenizer_and_legacy_checkpoints_load_with_theirs(
    tmp_path: Path,
) -> None:
    """The tokenizer is saved with the model: a checkpoint built with the ≈ 530-token legacy
    tokenizer still loads with it (same ids as the legacy builder), whatever the default."""
    from paravt.models.tokenizer import train_tokenizer
    from paravt.protocol.prompts import system_prompt

    old = build_tiny("qwen3_vl", "xs", tmp_path / "old", tokenizer="legacy")
    new = build_tiny("qwen3_vl", "xs", tmp_path / "new", corpus=protocol_corpus())
    assert old.vocab_size < 600 < 1500 < new.vocab_size and new.tokenizer == "protocol"
    p = load_policy(old.path)
    assert len(p.tokenizer) == p.model.config.text_config.vocab_size == old.vocab_size
    text = system_prompt("parallel")
    legacy_ids = train_tokenizer("legacy")(text, add_special_tokens=False)["input_ids"]
    assert p.tokenizer(text, add_special_tokens=False)["input_ids"] == legacy_ids
    assert (
        len(load_policy(new.path).tokenizer(text, add_special_tokens=False)["input_ids"])
        < len(legacy_ids) / 2
    )


def test_accelerator_attention_turns_cudnn_sdpa_off_on_cuda_only() -> None:
    """On CUDA the cuDNN SDPA backend re-plans for every decode step's new key length (11 ms a call
    measured on an H200); `accelerator_attention` turns it off there and leaves a CPU run alone."""
    before = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        accelerator_attention("cpu")
        assert torch.backends.cuda.cudnn_sdp_enabled()
        accelerator_attention("cuda:0")
        assert not torch.backends.cuda.cudnn_sdp_enabled()
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)

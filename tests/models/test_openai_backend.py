"""OpenAIGenerator against a real OpenAI-compatible HTTP server on 127.0.0.1 serving the tiny model."""

from __future__ import annotations

import asyncio
import time

import pytest

from oai_server import RunningServer, ServerState, make_app
from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf import HFGenerator
from paravt.models.openai_backend import OpenAIGenerator
from paravt.protocol.tags import THINK_PREFIX

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=12)


@pytest.fixture(scope="module")
def served(loaded_policy):
    policy = loaded_policy("qwen3_vl")
    state = ServerState()
    gen = HFGenerator(policy)
    with RunningServer(make_app(gen, state)) as server:
        yield server, state, gen


@pytest.fixture()
def server(served):
    srv, state, gen = served
    state.fail_first, state.delay_s, state.requests, state.max_in_flight = 0, 0.0, 0, 0
    return srv, state, gen


def _client(url: str, tokenizer, **kw) -> OpenAIGenerator:
    kw.setdefault("timeout_s", 30.0)
    kw.setdefault("max_retries", 2)
    kw.setdefault("max_concurrency", 4)
    return OpenAIGenerator(url, tokenizer=tokenizer, backoff_s=0.01, **kw)


def _text_request(question: str, sampling: SamplingParams = GREEDY) -> GenRequest:
    msgs = (ChatMessage("system", "You are a helpful assistant."), ChatMessage("user", question))
    return GenRequest(prompt_ids=(), messages=msgs, sampling=sampling, response_prefix=THINK_PREFIX)


def test_text_round_trip_matches_local_generation_of_the_same_conversation(server) -> None:
    srv, state, gen = server
    req = _text_request("What colour is the flash?")
    client = _client(srv.url, gen.codec.tokenizer)
    out = asyncio.run(client.generate([req]))[0]
    local_ids = gen.codec.encode_messages(req.messages).ids + gen.codec.generation_prompt(THINK_PREFIX)
    local = asyncio.run(gen.generate([GenRequest(prompt_ids=local_ids, messages=req.messages, sampling=GREEDY)]))[0]
    assert out.finish_reason == local.finish_reason and out.text == local.text
    expected_ids = gen.codec.encode_text(out.text) + ((gen.codec.im_end_id,) if out.finish_reason == "stop" else ())
    assert out.token_ids == expected_ids
    if out.metrics["logprobs_from_server"]:  # one server logprob per re-tokenised token: passed through
        assert out.logprobs[: len(local.logprobs)] == pytest.approx(local.logprobs[: len(out.logprobs)], abs=1e-6)
    assert state.last_body["continue_final_message"] is True and state.last_body["add_generation_prompt"] is False
    assert state.last_body["messages"][-1] == {"role": "assistant", "content": THINK_PREFIX}
    assert state.last_body["model"] == "tiny"  # discovered through /v1/models


def test_video_frames_are_sent_as_timestamped_data_urls(server, video_frames) -> None:
    srv, state, gen = server
    msgs = (ChatMessage("user", "<video>\nWhat colour?", videos=(video_frames,)),)
    req = GenRequest(prompt_ids=(), messages=msgs, videos=(video_frames,), sampling=GREEDY)
    out = asyncio.run(_client(srv.url, gen.codec.tokenizer).generate([req]))[0]
    assert out.finish_reason in ("stop", "length")
    parts = state.last_body["messages"][0]["content"]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert len(urls) == len(video_frames) and all(u.startswith("data:image/jpeg;base64,") for u in urls)
    assert texts[:3] == ["<0.0 seconds>", "<0.5 seconds>", "<1.0 seconds>"] and texts[-1] == "\nWhat colour?"


def test_concurrency_is_capped_by_the_semaphore(server) -> None:
    srv, state, gen = server
    state.delay_s = 0.2
    reqs = [_text_request(f"Question {i}?", SamplingParams(temperature=0.0, max_new_tokens=3)) for i in range(6)]
    outs = asyncio.run(_client(srv.url, gen.codec.tokenizer, max_concurrency=2).generate(reqs))
    assert all(o.finish_reason in ("stop", "length") for o in outs)
    assert state.max_in_flight == 2


def test_503_answers_are_retried_with_backoff(server) -> None:
    srv, state, gen = server
    state.fail_first = 2
    out = asyncio.run(_client(srv.url, gen.codec.tokenizer, max_retries=3, model="tiny")
                      .generate([_text_request("Hi?")]))[0]
    assert out.finish_reason in ("stop", "length") and out.metrics["attempts"] == 3.0
    assert state.requests == 3


def test_exhausted_retries_become_an_error_output(server) -> None:
    srv, state, gen = server
    state.fail_first = 10
    out = asyncio.run(_client(srv.url, gen.codec.tokenizer, max_retries=1, model="tiny")
                      .generate([_text_request("Hi?")]))[0]
    assert out.finish_reason == "error" and "503" in (out.error or "") and state.requests == 2


def test_a_timeout_becomes_an_error_output(server) -> None:
    srv, state, gen = server
    state.delay_s = 1.0
    t0 = time.perf_counter()
    out = asyncio.run(_client(srv.url, gen.codec.tokenizer, timeout_s=0.3, max_retries=0, model="tiny")
                      .generate([_text_request("Hi?")]))[0]
    assert out.finish_reason == "error" and "Timeout" in (out.error or "")
    assert time.perf_counter() - t0 < 0.9


def test_one_client_serves_calls_from_successive_event_loops(server) -> None:
    srv, state, gen = server
    client = _client(srv.url, gen.codec.tokenizer, model="tiny")
    first = asyncio.run(client.generate([_text_request("Hi?")]))[0]
    second = asyncio.run(client.generate([_text_request("Hi?")]))[0]
    assert first.finish_reason != "error" and second.token_ids == first.token_ids

"""OpenAIGenerator against a real OpenAI-compatible HTTP server on 127.0.0.1 serving the tiny
model."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

import pytest
from oai_server import RunningServer, ServerState, free_port, make_app

from paravt.http.retry import RetryPolicy
from paravt.models.base import ChatMessage, GenRequest, SamplingParams
from paravt.models.hf.generator import HFGenerator
from paravt.models.openai.backend import OpenAIGenerator
from paravt.protocol.tags import THINK_PREFIX
from raw_http import DECLARED_HUGE, RawServer, drip, endless_chunks

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=12)


class _StubTokenizer:
    """Only the stop token lookup: for tests in which no answer ever arrives."""

    def convert_tokens_to_ids(self, token: str) -> int:
        return 2


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
    state.token_ids, state.status, state.reply, state.strict = True, None, None, False
    return srv, state, gen


def _client(url: str, tokenizer, **kw) -> OpenAIGenerator:
    kw.setdefault("timeout_s", 30.0)
    retry = RetryPolicy(max_retries=kw.pop("max_retries", 2), backoff_s=0.01)
    kw.setdefault("max_concurrency", 4)
    return OpenAIGenerator(url, tokenizer=tokenizer, retry=retry, **kw)


def _text_request(question: str, sampling: SamplingParams = GREEDY) -> GenRequest:
    msgs = (ChatMessage("system", "You are a helpful assistant."), ChatMessage("user", question))
    return GenRequest(prompt_ids=(), messages=msgs, sampling=sampling, response_prefix=THINK_PREFIX)


def test_text_round_trip_returns_the_sampled_ids_logprobs_and_the_checked_prompt(server) -> None:
    srv, state, gen = server
    req = _text_request("What colour is the flash?")
    client = _client(srv.url, gen.codec.tokenizer)
    local_ids = gen.codec.encode_messages(req.messages).ids + gen.codec.generation_prompt(
        THINK_PREFIX
    )
    out = asyncio.run(client.generate([replace(req, prompt_ids=local_ids)]))[0]
    local = asyncio.run(
        gen.generate([GenRequest(prompt_ids=local_ids, messages=req.messages, sampling=GREEDY)])
    )[0]
    assert (
        out.token_ids == local.token_ids and out.text == local.text
    )  # the server's ids, not re-tokenised text
    assert out.logprobs == pytest.approx(local.logprobs, abs=1e-6) and all(
        lp < 0 for lp in out.logprobs
    )
    assert out.metrics["server_token_ids"] == 1.0 and out.metrics["prompt_ids_match"] == 1.0
    assert client.counters.prompt_checked == 1 and client.counters.prompt_mismatch == 0
    body = state.last_body
    assert body["return_token_ids"] is True and body["logprobs"] is True and body["top_k"] == -1
    assert body["logit_bias"] == {
        str(i): -100.0 for i in gen.codec.vision_token_ids
    }  # as hf suppresses them
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["messages"][-1] == {"role": "assistant", "content": THINK_PREFIX}
    assert body["model"] == "tiny"  # discovered through /v1/models


def test_video_is_one_video_url_with_metadata_that_reproduces_our_prompt_ids(
    server, video_frames
) -> None:
    srv, state, gen = server
    msgs = (ChatMessage("user", "<video>\nWhat colour?", videos=(video_frames,)),)
    ids = gen.codec.encode_messages(msgs).ids + gen.codec.generation_prompt()
    req = GenRequest(prompt_ids=ids, messages=msgs, videos=(video_frames,), sampling=GREEDY)
    out = asyncio.run(_client(srv.url, gen.codec.tokenizer).generate([req]))[0]
    assert out.finish_reason in ("stop", "length") and out.metrics["prompt_ids_match"] == 1.0
    parts = state.last_body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["video_url", "text"] and parts[1][
        "text"
    ] == "\nWhat colour?"
    url = parts[0]["video_url"]["url"]
    assert url.startswith("data:video/jpeg;base64,") and url.count(",") == len(video_frames)
    kw = state.last_body["media_io_kwargs"]["video"]
    assert (
        kw["num_frames"] == -1
        and kw["fps"] == 1000.0
        and kw["total_num_frames"] >= len(video_frames)
    )
    assert kw["frames_indices"] == [round(t * 1000) for t in video_frames.timestamps]


def test_a_prompt_the_server_encodes_differently_is_counted_and_logged(server, caplog) -> None:
    srv, state, gen = server
    req = _text_request("Hi?")
    client = _client(srv.url, gen.codec.tokenizer)
    ours = gen.codec.encode_messages(req.messages).ids + gen.codec.generation_prompt(THINK_PREFIX)
    with caplog.at_level(logging.WARNING, logger="paravt.models.openai.backend"):
        out = asyncio.run(client.generate([replace(req, prompt_ids=ours[:-3] + (7, 7, 7))]))[0]
    assert out.finish_reason != "error" and out.metrics["prompt_ids_match"] == 0.0
    assert client.counters.prompt_mismatch == 1
    assert f"first difference at {len(ours) - 3}" in caplog.text


def test_a_server_without_token_ids_still_serves_eval_with_one_note(server, caplog) -> None:
    srv, state, gen = server
    state.token_ids = False
    client = _client(srv.url, gen.codec.tokenizer)
    with caplog.at_level(logging.WARNING, logger="paravt.models.openai.backend"):
        outs = asyncio.run(client.generate([_text_request("Hi?"), _text_request("Why?")]))
    for out in outs:
        expected = gen.codec.encode_text(out.text) + (
            (gen.codec.im_end_id,) if out.finish_reason == "stop" else ()
        )
        assert out.token_ids == expected and out.metrics["server_token_ids"] == 0.0
        assert "prompt_ids_match" not in out.metrics
    assert caplog.text.count("not trainable") == 1


def test_a_strict_openai_server_gets_plain_requests_after_rejecting_the_extras(
    server, caplog
) -> None:
    srv, state, gen = server
    state.strict = True
    client = _client(srv.url, gen.codec.tokenizer, model="tiny")
    with caplog.at_level(logging.WARNING, logger="paravt.models.openai.backend"):
        first = asyncio.run(client.generate([_text_request("Hi?")]))[0]
        second = asyncio.run(client.generate([_text_request("Why?")]))[0]
    assert first.finish_reason != "error" and second.finish_reason != "error"
    assert state.requests == 3  # one rejected, then plain bodies only
    assert "return_token_ids" not in state.last_body and "top_k" not in state.last_body
    assert (
        client.counters.with_token_ids == 0
        and caplog.text.count("rejects vLLM's request fields") == 1
    )


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_both_url_forms_reach_the_server(server, suffix: str) -> None:
    srv, state, gen = server
    out = asyncio.run(
        _client(srv.url + suffix, gen.codec.tokenizer).generate([_text_request("Hi?")])
    )[0]
    assert out.finish_reason in ("stop", "length") and state.requests == 1


def test_a_wrong_path_is_an_error_output_not_a_traceback(server) -> None:
    srv, state, gen = server
    out = asyncio.run(
        _client(srv.url + "/v2", gen.codec.tokenizer).generate([_text_request("Hi?")])
    )[0]
    assert (
        out.finish_reason == "error"
        and "HTTP 404" in (out.error or "")
        and "/v2/v1/models" in (out.error or "")
    )


def test_a_client_error_is_not_retried(server) -> None:
    srv, state, gen = server
    state.status = 400
    out = asyncio.run(
        _client(srv.url, gen.codec.tokenizer, model="tiny", max_retries=3).generate(
            [_text_request("Hi?")]
        )
    )[0]
    assert out.finish_reason == "error" and "HTTP 400" in (out.error or "") and state.requests == 1


def test_a_refused_connection_is_an_error_output() -> None:
    tok = _StubTokenizer()
    out = asyncio.run(
        OpenAIGenerator(
            f"http://127.0.0.1:{free_port()}",
            tokenizer=tok,
            retry=RetryPolicy(max_retries=1, backoff_s=0.01),
            timeout_s=2.0,
        ).generate([_text_request("Hi?")])
    )[0]
    assert (
        out.finish_reason == "error"
        and "ConnectError" in (out.error or "")
        and "2 attempts" in (out.error or "")
    )


def test_concurrency_is_capped_by_the_semaphore(server) -> None:
    srv, state, gen = server
    state.delay_s = 0.2
    reqs = [
        _text_request(f"Question {i}?", SamplingParams(temperature=0.0, max_new_tokens=3))
        for i in range(6)
    ]
    outs = asyncio.run(_client(srv.url, gen.codec.tokenizer, max_concurrency=2).generate(reqs))
    assert all(o.finish_reason in ("stop", "length") for o in outs)
    assert state.max_in_flight == 2


def test_503_answers_are_retried_with_backoff(server) -> None:
    srv, state, gen = server
    state.fail_first = 2
    out = asyncio.run(
        _client(srv.url, gen.codec.tokenizer, max_retries=3, model="tiny").generate(
            [_text_request("Hi?")]
        )
    )[0]
    assert out.finish_reason in ("stop", "length") and out.metrics["attempts"] == 3.0
    assert state.requests == 3


def test_exhausted_retries_become_an_error_output(server) -> None:
    srv, state, gen = server
    state.fail_first = 10
    out = asyncio.run(
        _client(srv.url, gen.codec.tokenizer, max_retries=1, model="tiny").generate(
            [_text_request("Hi?")]
        )
    )[0]
    assert out.finish_reason == "error" and "503" in (out.error or "") and state.requests == 2


def test_a_timeout_becomes_an_error_output(server) -> None:
    srv, state, gen = server
    state.delay_s = 1.0
    t0 = time.perf_counter()
    out = asyncio.run(
        _client(srv.url, gen.codec.tokenizer, timeout_s=0.3, max_retries=0, model="tiny").generate(
            [_text_request("Hi?")]
        )
    )[0]
    assert out.finish_reason == "error" and "Timeout" in (out.error or "")
    assert time.perf_counter() - t0 < 0.9


def test_one_client_serves_calls_from_successive_event_loops(server) -> None:
    srv, state, gen = server
    client = _client(srv.url, gen.codec.tokenizer, model="tiny")
    first = asyncio.run(client.generate([_text_request("Hi?")]))[0]
    second = asyncio.run(client.generate([_text_request("Hi?")]))[0]
    assert first.finish_reason != "error" and second.token_ids == first.token_ids


def _answer(
    content: str, finish: str, lps: list[float], token_ids: list[int] | None = None
) -> dict:
    """A chat completion shaped like vLLM 0.32's (``return_token_ids`` adds ``token_ids``)."""
    choice = {
        "index": 0,
        "finish_reason": finish,
        "message": {"role": "assistant", "content": content},
        "logprobs": {"content": [{"token": "?", "logprob": lp} for lp in lps]},
    }
    if token_ids is not None:
        choice["token_ids"] = token_ids
    return {"choices": [choice]}


def test_logprobs_of_a_turn_that_stops_keep_the_stop_token_entry(served) -> None:
    _, _, gen = served
    client = _client("http://unused", gen.codec.tokenizer)
    text = "The answer is A."
    ids = list(gen.codec.encode_text(text))
    end = gen.codec.im_end_id
    lps = [-0.5 - i for i in range(len(ids) + 1)]
    req = _text_request("Hi?")
    with_ids = client._parse(_answer(text, "stop", lps, ids + [end]), req, 0.1, 1)
    assert with_ids.token_ids == (*ids, end) and with_ids.logprobs == tuple(lps)
    retok = client._parse(_answer(text, "stop", lps), req, 0.1, 1)  # entries include <|im_end|>
    assert (
        retok.token_ids == (*ids, end)
        and retok.logprobs == tuple(lps)
        and retok.metrics["logprobs_from_server"] == 1
    )
    no_stop_entry = client._parse(_answer(text, "stop", lps[:-1]), req, 0.1, 1)
    assert no_stop_entry.logprobs == (*lps[:-1], 0.0)
    cut = client._parse(
        _answer(text, "length", lps[:3]), req, 0.1, 1
    )  # entries of another tokenisation
    assert cut.logprobs == (0.0,) * len(ids) and cut.metrics["logprobs_from_server"] == 0
    assert client.counters.logprobs_missing == 1 and client.counters.responses == 4


def test_a_stop_without_the_stop_id_gets_it_appended(served) -> None:
    _, _, gen = served
    client = _client("http://unused", gen.codec.tokenizer)
    ids = list(gen.codec.encode_text("ok"))
    out = client._parse(_answer("ok", "stop", [-1.0] * len(ids), ids), _text_request("Hi?"), 0.1, 1)
    assert out.token_ids == (*ids, gen.codec.im_end_id) and out.logprobs == (-1.0,) * len(ids) + (
        0.0,
    )


def test_a_malformed_answer_is_an_error_output(server) -> None:
    srv, state, gen = server
    state.reply = {"choices": []}
    out = asyncio.run(
        _client(srv.url, gen.codec.tokenizer, model="tiny").generate([_text_request("Hi?")])
    )[0]
    assert (
        out.finish_reason == "error"
        and "malformed chat completion" in (out.error or "")
        and state.requests == 1
    )


def test_a_server_dripping_one_byte_at_a_time_is_cut_at_the_whole_request_deadline() -> None:
    # every byte comes well within httpx's per-read timeout; only a deadline on the whole request
    # ends it
    with RawServer(drip(0.3)) as srv:
        t0 = time.monotonic()
        out = asyncio.run(
            OpenAIGenerator(
                srv.url,
                tokenizer=_StubTokenizer(),
                model="tiny",
                timeout_s=1.0,
                retry=RetryPolicy(max_retries=1, backoff_s=0.01),
            ).generate([_text_request("Hi?")])
        )[0]
        took = time.monotonic() - t0
    assert out.finish_reason == "error" and "no whole reply within timeout_s=1 s" in (
        out.error or ""
    )
    assert "after 2 attempts" in (out.error or "")
    assert 2 * 1.0 <= took < 2 * 1.0 + 1.5, took  # each attempt cut at 1 s (the body needs 300 s)
    assert srv.connections == 2


@pytest.mark.parametrize(
    "respond", [endless_chunks(65536), DECLARED_HUGE], ids=["streamed", "declared"]
)
def test_a_reply_over_the_size_cap_is_an_error_output_not_retried(respond) -> None:  # noqa: ANN001
    with RawServer(respond) as srv:
        t0 = time.monotonic()
        out = asyncio.run(
            OpenAIGenerator(
                srv.url,
                tokenizer=_StubTokenizer(),
                model="tiny",
                timeout_s=30.0,
                retry=RetryPolicy(max_retries=2, backoff_s=0.01),
                max_reply_bytes=1 << 20,
            ).generate([_text_request("Hi?")])
        )[0]
        took = time.monotonic() - t0
    assert out.finish_reason == "error" and "reply too large" in (out.error or "")
    assert "max_reply_bytes=1048576" in (out.error or "")
    assert srv.connections == 1 and took < 10, took


def test_the_servers_api_key_is_sent_as_a_bearer_token_and_a_missing_one_is_an_error_output(
    served,
) -> None:
    """Issue 34 item 7: a keyed OpenAI-compatible server (vLLM / SGLang --api-key) answers 401
    without the key; the backend sends ``model.api_key_file``'s key and never names it."""
    from paravt.tools.server.auth import BearerAuth

    _, _, gen = served
    key = "sk-" + "q" * 40
    with RunningServer(BearerAuth(make_app(gen, ServerState()), key=key)) as srv:  # type: ignore[arg-type]
        bare = asyncio.run(
            _client(srv.url, gen.codec.tokenizer, max_retries=3).generate([_text_request("Hi?")])
        )[0]
        keyed = asyncio.run(
            _client(srv.url, gen.codec.tokenizer, api_key=key).generate([_text_request("Hi?")])
        )[0]
    assert (
        bare.finish_reason == "error"
        and "HTTP 401" in (bare.error or "")
        and key not in (bare.error or "")
    )
    assert keyed.finish_reason != "error" and keyed.token_ids

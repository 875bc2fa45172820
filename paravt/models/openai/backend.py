"""OpenAIGenerator: ``Generator`` over an OpenAI-compatible ``/v1/chat/completions`` server
(vLLM, SGLang) — the chat backend: it reads ``GenRequest.messages``, not ``prompt_ids``.

What the server sees (media layout, token-id request, forced prefix) is built by
``paravt.models.openai.payload``; ``base_url`` may end with ``/v1`` or not
(``paravt.http.urls``).

Tokens:
- A server that returns token ids (vLLM with ``return_token_ids``): the sampled ids ARE the
  response's ``token_ids`` (the stop token ``<|im_end|>`` included when it stopped on it), the
  text is decoded from them locally, and the server's ``prompt_token_ids`` are compared with the
  request's ``prompt_ids`` (our trajectory). A mismatch is counted (``counters.prompt_mismatch``,
  ``metrics["prompt_ids_match"] == 0``) and logged with the first differing position: the
  trajectory then holds a context the sampler did not see.
- A server that returns no ids (a hosted API): the text is re-tokenised with the LOCAL tokenizer
  and ``<|im_end|>`` appended on ``stop``. Such trajectories are fine for eval but not trainable
  (re-tokenised text is not the sampled sequence); a one-line note says so once per generator.
- Logprobs come from the server's ``logprobs.content`` when it holds exactly one entry per
  returned id (entries include the stop token); a re-tokenised response whose entries miss only
  the stop token gets 0.0 for it; otherwise all are 0.0 and ``metrics["logprobs_from_server"] ==
  0``. Reliability: at most ``max_concurrency`` requests in flight; each HTTP exchange follows the
  ONE policy of the OpenAI-compatible clients (``paravt.http.retry``): a WHOLE-request
  deadline
of ``timeout_s`` (a server that drips one byte a second is cut at ``timeout_s``), a reply cap of
``max_reply_bytes``, and timeouts, transport errors, 408, 429 and 5xx retried ``max_retries`` times
after ``backoff_s * 2**retry`` or the server's ``Retry-After`` when longer. Any other failure (a 404
for a wrong URL, an unreadable body, a body over the cap) or the last retried one becomes a
``finish_reason="error"`` output — never an exception. A strict OpenAI server that answers 400
naming one of vLLM's extra fields gets plain requests from then on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from paravt.errors import ModelError
from paravt.http.retry import RetryPolicy, send
from paravt.http.urls import api_base
from paravt.models.base import FinishReason, GenOutput, GenRequest, error_output
from paravt.models.chat import VISION_TOKENS
from paravt.models.openai.payload import VLLM_EXTRAS, chat_payload, strip_extras
from paravt.protocol.tags import IM_END

log = logging.getLogger(__name__)


class _Fatal(Exception):
    """A request that failed for good (after the policy's retries, or one no retry can fix)."""


@dataclass
class ServerCounters:
    """What the server's answers were worth for training (summed over the generator's life)."""

    responses: int = 0  # successful completions
    with_token_ids: int = 0  # of which carried the sampled token ids
    prompt_checked: int = 0  # of which carried prompt_token_ids to compare with ours
    prompt_mismatch: int = 0  # of which differed from the trajectory's prompt ids
    logprobs_missing: int = 0  # responses whose logprobs could not be matched to the ids (0.0)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def not_json(url: str, head: str) -> str:
    """The cause and the fix for a 200 whose body is not JSON (a proxy's or a web app's page)."""
    return (
        f"the answer of {url} (HTTP 200) is not JSON: {head!r}; point model.path at the base URL "
        "of an OpenAI-compatible server (vLLM, SGLang: http://HOST:PORT/v1)"
    )


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


class OpenAIGenerator:
    """Generator over an OpenAI-compatible chat server (see the module docstring)."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy = RetryPolicy(),
        max_concurrency: int = 16,
        tokenizer: Any,
        image_format: str = "jpeg",
        max_reply_bytes: int = 32 << 20,
        api_key: str | None = None,
    ) -> None:
        self.base_url = api_base(base_url)
        # sent as a Bearer token (vLLM / SGLang --api-key); never part of a message or a log line
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self.timeout_s = timeout_s
        self.max_reply_bytes = max_reply_bytes  # token ids and logprobs of a long answer: a few MB
        self.retry = retry
        self.image_format = image_format
        self.tokenizer = tokenizer
        self.im_end_id: int = tokenizer.convert_tokens_to_ids(IM_END)
        self.suppress_ids = tuple(tokenizer.convert_tokens_to_ids(t) for t in VISION_TOKENS)
        self.max_concurrency = max_concurrency
        self.counters = ServerCounters()
        self._noted_no_ids = False
        self._plain = False  # the server rejected vLLM's extra fields: send plain OpenAI bodies
        # the client and the semaphore belong to one event loop; rebuilt when called from another
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem = asyncio.Semaphore(max_concurrency)
        self._client: httpx.AsyncClient | None = None

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._client = httpx.AsyncClient(
                base_url=self.base_url + "/", timeout=self.timeout_s, headers=self._headers
            )

    def _http(self) -> httpx.AsyncClient:
        assert self._client is not None
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client, self._loop = None, None

    async def check(self, key_file: str | None = None) -> None:
        """Ask the server for its models once, under the retry policy, before any episode runs.
        `ModelError` naming the URL and the cause when it refuses the key (401, 403) or fails
        (connection refused, a timeout, 5xx after the retries) or answers 200 with a body that is
        not JSON (a proxy's login page, a web app on that port): a run stops at once instead of
        recording every row as an error. A server without ``/models`` passes when the served
        model's name is set. ``key_file``: where the key came from, for the message."""
        where = f"model server {self.base_url}"
        async with httpx.AsyncClient(base_url=self.base_url + "/", headers=self._headers) as c:
            out = await send(
                c,
                "GET",
                "models",
                policy=self.retry,
                timeout_s=self.timeout_s,
                max_bytes=self.max_reply_bytes,
            )
        if out.reply is None:
            cause = "connection refused" if "ConnectError" in (out.error or "") else "no reply"
            raise ModelError(
                f"{where} cannot be used: {cause} ({out.error}); start it (`paravt serve-model`) "
                "or fix model.path"
            )
        status = out.reply.status
        if status in (401, 403):
            sent = f"sent the key of {key_file}" if key_file else "sent none"
            raise ModelError(
                f"{where} refused the key ({status}; {sent}): set model.api_key_file to the file "
                "the server's --api-key-file reads"
            )
        if status != 200 and self.model is None:
            raise ModelError(
                f"{where}: GET models answered HTTP {status} ({out.reply.head(120)}); fix "
                "model.path, or set model.served_model_name for a server without that route"
            )
        if status == 200:
            try:
                out.reply.json()
            except ValueError:
                raise ModelError(
                    f"{where}: {not_json(out.reply.url, out.reply.head(120))}"
                ) from None

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        self._bind_loop()
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _get_json(self, method: str, path: str, **kw: Any) -> tuple[Any, int]:
        """One HTTP exchange under the retry policy: (the JSON answer, attempts made); raises
        ``_Fatal`` (never an httpx error)."""
        out = await send(
            self._http(),
            method,
            path,
            policy=self.retry,
            timeout_s=self.timeout_s,
            max_bytes=self.max_reply_bytes,
            **kw,
        )
        if out.reply is None:
            hint = (
                (
                    "; lower sampling.max_new_tokens (the cap is OpenAIGenerator's "
                    "max_reply_bytes, "
                    "32 MiB by default)"
                )
                if out.too_large
                else ""
            )
            raise _Fatal(f"{out.error}{hint}")
        if out.reply.status != 200:
            raise _Fatal(f"HTTP {out.reply.status} from {out.reply.url}: {out.reply.head(300)}")
        try:
            return out.reply.json(), out.attempts
        except ValueError:
            raise _Fatal(not_json(out.reply.url, out.reply.head(200))) from None

    async def _model_name(self) -> str:
        if self.model is None:
            data, _ = await self._get_json("GET", "models")
            try:
                self.model = str(data["data"][0]["id"])
            except (KeyError, IndexError, TypeError):
                raise _Fatal(f"{self.base_url}/models lists no model: {str(data)[:200]}") from None
        return self.model

    async def _one(self, req: GenRequest) -> GenOutput:
        t0 = time.perf_counter()
        async with self._sem:
            try:
                body = chat_payload(
                    req, await self._model_name(), self.image_format, self.suppress_ids
                )
                data, attempts = await self._post(body)
                return self._parse(data, req, time.perf_counter() - t0, attempts)
            except _Fatal as err:
                return error_output(str(err), time.perf_counter() - t0)

    async def _post(self, body: dict[str, Any]) -> tuple[Any, int]:
        """POST a completion; a strict OpenAI server that rejects vLLM's extra fields (a 400 naming
        one) is asked again without them, and so are all later requests (logged once)."""
        if self._plain:
            return await self._get_json("POST", "chat/completions", json=strip_extras(body))
        try:
            return await self._get_json("POST", "chat/completions", json=body)
        except _Fatal as err:
            rejected = str(err).startswith(("HTTP 400", "HTTP 422")) and any(
                k in str(err) for k in VLLM_EXTRAS
            )
            if not rejected:
                raise
        self._plain = True
        log.warning(
            "%s rejects vLLM's request fields (%s): sending plain OpenAI requests from now on",
            self.base_url,
            ", ".join(VLLM_EXTRAS),
        )
        return await self._get_json("POST", "chat/completions", json=strip_extras(body))

    def _parse(self, data: Any, req: GenRequest, latency: float, attempts: int) -> GenOutput:
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
            reason = choice.get("finish_reason")
            entries = (choice.get("logprobs") or {}).get("content") or []
            server_lps = [float(x["logprob"]) for x in entries]
            token_ids = choice.get("token_ids")
            ids = None if token_ids is None else [int(t) for t in token_ids]
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise _Fatal(
                f"malformed chat completion response ({err!r}): {str(data)[:300]}"
            ) from None
        finish: FinishReason = "stop" if reason == "stop" else "length"
        self.counters.responses += 1
        if ids is not None:
            self.counters.with_token_ids += 1
            if finish == "stop" and (not ids or ids[-1] != self.im_end_id):
                ids.append(
                    self.im_end_id
                )  # a server that strips the stop id; its logprob is unknown
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
        else:
            self._note_no_ids()
            text = text.split(IM_END)[0]
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            if finish == "stop":
                ids.append(self.im_end_id)
        lps, from_server = self._logprobs(ids, server_lps, finish)
        metrics = {
            "latency_s": latency,
            "attempts": float(attempts),
            "logprobs_from_server": float(from_server),
            "server_token_ids": float(token_ids is not None),
        }
        match = self._check_prompt(data.get("prompt_token_ids"), req.prompt_ids)
        if match is not None:
            metrics["prompt_ids_match"] = float(match)
        return GenOutput(
            token_ids=tuple(ids),
            logprobs=tuple(lps),
            text=text,
            finish_reason=finish,
            metrics=metrics,
        )

    def _logprobs(
        self, ids: Sequence[int], server: list[float], finish: str
    ) -> tuple[list[float], bool]:
        if ids and len(server) == len(ids):
            return server, True
        if (
            ids and finish == "stop" and len(server) == len(ids) - 1
        ):  # entries without the stop token
            return [*server, 0.0], True
        self.counters.logprobs_missing += 1
        return [0.0] * len(ids), False

    def _check_prompt(self, server_ids: Any, ours: Sequence[int]) -> bool | None:
        if not isinstance(server_ids, list) or not ours:
            return None
        self.counters.prompt_checked += 1
        if list(server_ids) == list(ours):
            return True
        self.counters.prompt_mismatch += 1
        at = _first_difference(server_ids, ours)
        log.warning(
            "the server's prompt ids differ from the trajectory's (%d vs %d tokens, first "
            "difference at "
            "%d; %d of %d prompts differ so far): this turn's trajectory is not what the sampler "
            "saw",
            len(server_ids),
            len(ours),
            at,
            self.counters.prompt_mismatch,
            self.counters.prompt_checked,
        )
        return False

    def _note_no_ids(self) -> None:
        if not self._noted_no_ids:
            self._noted_no_ids = True
            log.warning(
                "%s returns no token ids: its responses are re-tokenised text, fine for eval but "
                "not trainable (serve with vLLM, which returns them with return_token_ids)",
                self.base_url,
            )

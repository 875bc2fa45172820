"""The ONE HTTP policy of every OpenAI-compatible client: the openai backend
(``paravt.models.openai.backend``), the LLM judge (``paravt.models.openai.judge``) and the
distillation teacher (``paravt.distill.teacher``). Torch-free, so that the judge stays torch-free.

Each attempt is one ``bounded_request`` (``paravt.http.bounded``): ONE deadline on connect,
headers and body together, and a cap on the reply's size. What happens after an attempt:
- a reply whose status is not in ``RETRY_STATUS`` (200, or a 4xx such as 400 / 404) is returned as
  it is: no retry changes it (the caller reads it);
- the deadline, a transport error (refused, reset) or a status in ``RETRY_STATUS`` (408, 429, 5xx)
  is retried, at most ``max_retries`` times, after ``RetryPolicy.wait_s``: ``backoff_s * 2**retry``,
  or the server's ``Retry-After`` (seconds or an HTTP date) when that is longer, never more than
  ``max_wait_s``;
- a reply over the size cap or one that cannot be read (a body that does not decode) fails at once:
  the server would send the same again.
``send`` never raises for any of these: it returns an ``HttpOutcome`` (a reply, or the error and the
number of attempts), which each client turns into its own result (an error output, a token-F1
fallback, a teacher error).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from paravt.http.bounded import Reply, ReplyTooLarge, bounded_request

#: Statuses worth another attempt: request timeout, rate limit, and server failures that pass.
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before asking again (see the module docstring)."""

    max_retries: int = 3  # attempts beyond the first
    backoff_s: float = 0.5  # the first wait; doubles per retry
    max_wait_s: float = 60.0  # no single wait is longer (a Retry-After of an hour is cut to this)

    def wait_s(self, retry: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0 = the first retry)."""
        wait = self.backoff_s * 2**retry
        asked = retry_after_s(retry_after)
        if asked is not None:
            wait = max(wait, asked)
        return min(wait, self.max_wait_s)


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header in seconds from ``now`` (default: the wall clock): delta-seconds
    (``"2"``) or an HTTP date (``"Wed, 21 Oct 2015 07:28:00 GMT"``); a date in the past is 0.
    None when absent or unreadable (the back-off alone decides)."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        secs = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT; a zone-less one is read as such
            return None
        secs = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, secs) if math.isfinite(secs) else None


@dataclass(frozen=True)
class HttpOutcome:
    """What one request came to under the policy."""

    reply: Reply | None  # a reply no retry would change: 200, or a status outside RETRY_STATUS
    error: str | None  # no reply: why (the last retried failure, or the one that is not retried)
    attempts: int  # requests sent (1 + retries)
    too_large: bool = False  # the reply was over the size cap (callers name their cap's setting)

    @property
    def retries(self) -> int:
        return self.attempts - 1


async def send(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    policy: RetryPolicy,
    timeout_s: float,
    max_bytes: int,
    **kw: Any,
) -> HttpOutcome:
    """``client.request(method, url, **kw)`` under the policy; never raises for an HTTP failure.
    The error of exhausted retries reads ``failed after N attempts: <the last failure>``."""
    where = str(client.base_url.join(url))
    last = "no attempt made"
    for attempt in range(policy.max_retries + 1):
        retry_after = None
        try:
            reply = await bounded_request(
                client, method, url, timeout_s=timeout_s, max_bytes=max_bytes, **kw
            )
        except TimeoutError:  # the whole-request deadline (asyncio.TimeoutError is TimeoutError)
            last = f"Timeout: no whole reply within timeout_s={timeout_s:g} s ({where})"
        except (httpx.TimeoutException, httpx.TransportError) as err:
            last = f"{type(err).__name__}: {err or 'timed out'} ({where})"
        except httpx.HTTPError as err:  # any other (a body that does not decode): not retried
            why = f"unreadable reply from {where} ({type(err).__name__}: {err})"
            return HttpOutcome(None, why, attempt + 1)
        except ReplyTooLarge as big:
            return HttpOutcome(
                None, f"reply too large from {where} ({big})", attempt + 1, too_large=True
            )
        else:
            if reply.status not in RETRY_STATUS:
                return HttpOutcome(reply, None, attempt + 1)
            last = f"HTTP {reply.status} from {reply.url}: {reply.head(200)}"
            retry_after = reply.retry_after
        if attempt < policy.max_retries:
            await asyncio.sleep(policy.wait_s(attempt, retry_after))
    n = policy.max_retries + 1
    return HttpOutcome(None, f"failed after {n} attempts: {last}", n)

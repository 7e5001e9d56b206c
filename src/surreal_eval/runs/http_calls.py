"""JSON over HTTP to the services an evaluation calls (search endpoints, rerankers).

One httpx AsyncClient per batch of calls, at most `concurrency` requests in flight, each with a
timeout, retried (tenacity, exponential wait) on a connection error, a timeout, HTTP 429 or 5xx;
any other status fails at once. Every failure is an EndpointFailed naming the service and the call,
never the full URL (its query holds the question's text, and may hold a key).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import EndpointFailed

if TYPE_CHECKING:
    import httpx

# httpx and tenacity are imported where a call is made, not with this module: every evaluation imports it (through
# endpoints.py), and most call no service (httpx alone is about 30 ms of a process's start)

__all__ = ["Service", "Call", "call_all"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Service:
    """A service and how it is called: `what` names it in messages ("endpoint docs", "reranker")."""

    what: str
    timeout: float = 10.0
    concurrency: int = 4
    retries: int = 3
    #: the longest wait between two attempts, in seconds
    max_wait: float = 2.0


@dataclass(frozen=True)
class Call:
    """One request: `about` names it in messages (a question id); `params` go URL-encoded, `body` as JSON."""

    about: str
    method: str
    url: str
    params: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None


class _Transient(Exception):
    """A failure another attempt may fix; its message is the one shown if none does."""


def _where(url: str) -> str:
    import httpx

    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}{parsed.path}"


async def _once(client: httpx.AsyncClient, service: Service, call: Call) -> Any:
    import httpx

    try:
        response = await client.request(call.method, call.url, params=call.params or None,
                                        json=call.body if call.method == "POST" else None)
    except httpx.TimeoutException:
        raise _Transient(f"{service.what} gave no answer within {service.timeout:g} s at {_where(call.url)}") from None
    except httpx.TransportError as error:
        raise _Transient(f"{service.what} cannot be reached at {_where(call.url)} ({type(error).__name__})") from None
    if response.status_code == 429 or response.status_code >= 500:
        raise _Transient(f"{service.what} answered HTTP {response.status_code} for {call.about}")
    if not response.is_success:
        raise EndpointFailed(f"{service.what} answered HTTP {response.status_code} for {call.about}: "
                             "check its URL and body", status=response.status_code)
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise EndpointFailed(f"{service.what} answered {call.about} with something that is not JSON") from None


async def _with_retries(client: httpx.AsyncClient, gate: asyncio.Semaphore, service: Service, call: Call) -> Any:
    from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    attempts = service.retries + 1
    retrying = AsyncRetrying(retry=retry_if_exception_type(_Transient), stop=stop_after_attempt(attempts),
                             wait=wait_exponential(multiplier=0.05, max=service.max_wait), reraise=True)
    async with gate:
        try:
            async for attempt in retrying:
                with attempt:
                    return await _once(client, service, call)
        except _Transient as error:
            raise EndpointFailed(f"{error} (after {attempts} attempt{'s' if attempts > 1 else ''})") from None
    raise AssertionError("unreachable")  # pragma: no cover - tenacity either returns or reraises


async def _all(service: Service, calls: list[Call]) -> list[Any]:
    import httpx

    gate = asyncio.Semaphore(service.concurrency)
    async with httpx.AsyncClient(timeout=httpx.Timeout(service.timeout), follow_redirects=False) as client:
        tasks = [asyncio.ensure_future(_with_retries(client, gate, service, c)) for c in calls]
        try:
            return await asyncio.gather(*tasks)
        finally:
            for task in tasks:  # the first failure ends the batch: no request left running
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def call_all(service: Service, calls: list[Call]) -> list[Any]:
    """The decoded JSON answer of every call of `calls`, in order; the first failure raises EndpointFailed."""
    if not calls:
        return []
    return asyncio.run(_all(service, calls))

"""OpenAI-compatible HTTP client for `ppt query`: concurrency, timeouts, retries, key handling.

- Concurrency: a pool of ``concurrency`` threads shares one keep-alive ``httpx.Client`` whose
  connection pool has the same size. A batch's requests run in parallel; results come back in input
  order, and each answer is handed to ``on_done`` as soon as it arrives (the resume journal).
- Retries: 429, 408, 409 and 5xx responses, timeouts, refused and dropped connections are retried
  up to ``max_retries`` times with exponential backoff and jitter (``base * 2**attempt``, capped,
  drawn in [d/2, d]). A ``Retry-After`` (or ``retry-after-ms``) header is honoured, and a 429 pauses
  every worker until then, not just the one that got it.
- Failures: other 4xx -> a RecordError for that record (``--on-error`` applies); 401/403/404 ->
  fatal config error (exit 78: wrong key, URL or model); retries exhausted -> fatal exit 75, or 69
  when the endpoint could never be reached (connection refused, DNS, TLS).
- Keys: sent as a bearer header only; never logged, never in stamps; redirects are not followed (a
  redirect to another host must not receive the key). Which key, and for which URL: :mod:`ppt.remote.auth`;
  reading responses: :mod:`ppt.remote.wire`.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import orjson

from ppt.io import ExitCode, PptError, RecordError
from ppt.remote.auth import check_base_url, redact_url
from ppt.remote.backends import ENDPOINTS, Answer, OnDone
from ppt.remote.wire import error_detail, parse_response, retry_after_s

RETRY_STATUSES = frozenset({408, 409, 429})
MAX_RETRY_AFTER_S = 300.0
_ABORTED = object()


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt + 1``."""
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S) * (1 + 0.1 * rng.random())
        d = min(self.backoff_max_s, self.backoff_base_s * (2**attempt))
        return d / 2 + rng.random() * d / 2


class _DaemonPool:
    """A fixed pool of daemon worker threads. Unlike ThreadPoolExecutor's, the interpreter does not
    wait for them at exit, so Ctrl-C ends `ppt query` at once instead of after in-flight requests."""

    def __init__(self, n: int) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._threads = [threading.Thread(target=self._work, name=f"ppt-query-{i}", daemon=True) for i in range(n)]
        for t in self._threads:
            t.start()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fut, fn, args = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
                fut.set_exception(e)

    def submit(self, fn: Any, *args: Any) -> Future:
        fut: Future = Future()
        self._queue.put((fut, fn, args))
        return fut

    def shutdown(self, wait: bool = True, cancel_futures: bool = True) -> None:
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for t in self._threads:
                t.join()


class HttpBackend:
    """Sends request bodies to ``{base_url}/chat/completions`` (or ``/completions``)."""

    kind = "http"

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        import httpx

        from ppt import __version__

        if concurrency < 1:
            raise PptError("--concurrency must be >= 1", ExitCode.USAGE)
        if not timeout_s > 0:
            raise PptError("--timeout must be > 0", ExitCode.USAGE)
        self.base_url = check_base_url(base_url)
        self.concurrency, self.retry = concurrency, retry or RetryPolicy()
        self.rng = rng or random.Random()
        headers = {"User-Agent": f"ppt/{__version__}", "Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            follow_redirects=False,
        )
        self.pool = _DaemonPool(concurrency)
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._not_before = 0.0  # shared pause after a 429
        self._abort = threading.Event()
        self._fatal: PptError | None = None

    def describe(self) -> dict:
        return {"backend": "http", "base_url": redact_url(self.base_url)}

    def url(self, kind: str) -> str:
        return self.base_url + ENDPOINTS[kind]

    # ------------------------------------------------------------------ batch

    def run(self, items: Sequence[tuple[Any, dict]], kind: str, on_done: OnDone | None = None) -> list[Any]:
        """Send every body (in parallel), return Answer | RecordError per item in order; raise PptError
        when the endpoint is unusable (after letting in-flight requests finish)."""
        if self._fatal is not None:
            raise self._fatal
        url = self.url(kind)

        def one(i: int, body: dict) -> Any:
            res = self._call(url, body, kind)
            if res is not _ABORTED and on_done is not None:
                on_done(i, res)
            return res

        futures = [self.pool.submit(one, i, body) for i, (_rid, body) in enumerate(items)]
        results = [f.result() for f in futures]
        if self._fatal is not None:
            raise self._fatal
        return results

    def stop_sending(self) -> None:
        """Send nothing more: requests not yet sent return unsent (no on_done); in-flight ones finish."""
        self._abort.set()

    def close(self, wait: bool = True) -> None:
        """Stop: pending requests are cancelled; with ``wait`` in-flight ones finish first, without it
        (Ctrl-C, a fatal error) their connections are closed under them so the process exits at once."""
        self._abort.set()
        self.pool.shutdown(wait=wait, cancel_futures=True)
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing under in-flight requests may complain; we are leaving
            pass

    # ------------------------------------------------------------------ one request

    def _set_fatal(self, err: PptError) -> object:
        with self._lock:
            if self._fatal is None:
                self._fatal = err
        self._abort.set()
        return _ABORTED

    def _wait_gate(self) -> None:
        while not self._abort.is_set():
            with self._lock:
                wait = self._not_before - time.monotonic()
            if wait <= 0:
                return
            self._abort.wait(min(wait, 1.0))

    def _call(self, url: str, body: dict, kind: str) -> Any:
        import httpx

        payload = orjson.dumps(body)
        causes: list[str] = []
        t0 = time.monotonic()
        for attempt in range(self.retry.max_retries + 1):
            self._wait_gate()
            if self._abort.is_set():
                return _ABORTED
            retry_after: float | None = None
            with self._lock:
                self.stats["requests"] += 1
            try:
                resp = self.client.post(url, content=payload)
            except httpx.TimeoutException as e:
                cause = "connect_timeout" if isinstance(e, httpx.ConnectTimeout) else "timeout"
            except httpx.ConnectError:
                cause = "connect"
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                cause = "dropped"
            except httpx.TransportError as e:
                cause = type(e).__name__
            else:
                status = resp.status_code
                if 200 <= status < 300:
                    try:
                        data = orjson.loads(resp.content)
                    except orjson.JSONDecodeError:
                        return RecordError("bad_response", f"the endpoint returned invalid JSON (HTTP {status})")
                    res = parse_response(data, kind)
                    if isinstance(res, Answer):
                        res.attempts, res.latency_s = attempt + 1, round(time.monotonic() - t0, 4)
                    return res
                detail = error_detail(resp)
                detail = f", {detail}" if detail else ""
                if status in RETRY_STATUSES or status >= 500:
                    cause = f"http_{status}"
                    retry_after = retry_after_s(resp.headers)
                elif status in (401, 403):
                    return self._set_fatal(
                        PptError(
                            f"the endpoint refused the credentials (HTTP {status}{detail}) at {redact_url(url)}",
                            ExitCode.CONFIG,
                            hint="check the key in the variable named by --api-key-env",
                        )
                    )
                elif status == 404:
                    return self._set_fatal(
                        PptError(
                            f"not found (HTTP 404{detail}): POST {redact_url(url)}",
                            ExitCode.CONFIG,
                            hint="check --base-url (usually ends in /v1), --endpoint and --model",
                        )
                    )
                else:
                    return RecordError(f"http_{status}", f"the endpoint rejected the request (HTTP {status}{detail})")
            causes.append(cause)
            with self._lock:
                self.stats[f"retry:{cause}"] += 1
            if attempt == self.retry.max_retries:
                break
            delay = self.retry.delay(attempt, retry_after, self.rng)
            if cause == "http_429":
                with self._lock:
                    self._not_before = max(self._not_before, time.monotonic() + delay)
            elif self._abort.wait(delay):
                return _ABORTED
        last = causes[-1] if causes else "unknown"
        where = redact_url(self.base_url)
        if all(c in ("connect", "connect_timeout") or c.endswith("Error") for c in causes):
            return self._set_fatal(
                PptError(
                    f"endpoint unavailable: cannot connect to {where} ({len(causes)} attempts, last: {last})",
                    ExitCode.UNAVAILABLE,
                    hint="is the server running? check --base-url; `ppt serve` starts a local one",
                )
            )
        hint = (
            "the endpoint answers slower than --timeout: raise it"
            if last == "timeout"
            else "try again later, or lower --concurrency"
        ) + "; --resume FILE keeps answers already paid for"
        return self._set_fatal(
            PptError(
                f"retries exhausted: {len(causes)} attempts failed (last: {last}) at {where}",
                ExitCode.TEMPFAIL,
                hint=hint,
            )
        )

"""ModelService: a local causal LM behind the Service contract, with dynamic batching.

Requests that arrive together are generated together: one worker thread owns the model (it is not
thread-safe, and this is what serialises access to it, on either HTTP transport), collects up to
``max_batch`` pending requests (waiting at most ``max_wait_s`` after the first) and runs them as one
left-padded batch. Each request's sampling uses its own generator (from its ``seed`` when given, else OS
entropy), so batching never changes what a seeded request gets. A lock around ``complete`` would do the
same serialisation but run every batch with one request in it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ppt.log import logger
from ppt.remote.logprobs import token_logprobs
from ppt.remote.service import ClientGone, Service, ServiceError

REQUEST_TIMEOUT_S = 600.0


class ModelService(Service):
    """Serve a ppt.lm.generate.LocalGenerator with dynamic batching (one worker thread owns the model)."""

    features = frozenset({"n", "logprobs"})

    def __init__(
        self,
        generator: Any,
        name: str | None = None,
        *,
        max_batch: int = 8,
        max_wait_s: float = 0.01,
        max_tokens_limit: int = 2048,
    ) -> None:
        self.generator = generator
        if not getattr(generator, "can_score", True):  # e.g. the vllm runtime: logprobs are refused (400)
            self.features = self.features - {"logprobs"}
        self.name = name or str(generator.name)
        self.max_batch, self.max_wait_s, self.max_tokens_limit = (
            max(1, max_batch),
            max(0.0, max_wait_s),
            max_tokens_limit,
        )
        self.batches: list[int] = []  # sizes of the batches run (for tests and benchmarks)
        self.dropped = 0  # requests whose client left before they were generated
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._loop, name="ppt-serve-model", daemon=True)
        self._worker.start()

    def complete(self, body: dict, kind: str, gone: Callable[[], bool] | None = None) -> dict:
        from ppt.io import RecordError
        from ppt.remote.backends import parse_request

        try:
            req = parse_request(body, kind, max_tokens_limit=self.max_tokens_limit, features=self.features | {"stream"})
        except ValueError as e:
            raise ServiceError(400, str(e)) from None
        futs: list[Future] = []
        for choice in range(req.n):
            fut: Future = Future()
            self._queue.put((req, choice, fut))
            futs.append(fut)
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        results: list[Any] = []
        for fut in futs:
            while True:
                try:
                    results.append(fut.result(timeout=0.25))
                    break
                except TimeoutError:
                    if self._stop.is_set():  # closing: nobody will generate it
                        for f in futs:
                            f.cancel()
                        raise ServiceError(503, "the server is shutting down", "server_error") from None
                    if gone is not None and gone():
                        cancelled = [f.cancel() for f in futs]
                        if any(cancelled):
                            self.dropped += 1  # a client that timed out and left: its request is never generated
                        raise ClientGone() from None
                    if time.monotonic() > deadline:
                        for f in futs:
                            f.cancel()
                        raise ServiceError(503, "generation timed out", "server_error") from None

        for res in results:
            if isinstance(res, RecordError):
                raise ServiceError(400, res.message, "invalid_request_error", res.type)
        choices = [{"text": c.text, "finish_reason": c.finish_reason, "logprobs": lp} for c, lp in results]
        prompt_tokens = results[0][0].prompt_tokens
        completion = sum(c.completion_tokens for c, _ in results)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        }
        return {"choices": choices, "usage": usage}

    def _take_batch(self) -> list[tuple[Any, int, Future]]:
        try:
            first = self._queue.get(timeout=0.2)
        except queue.Empty:
            return []
        batch = [first]
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                batch.append(self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _loop(self) -> None:
        from ppt.io import RecordError
        from ppt.remote.backends import run_local
        from ppt.rng import derive_seed, record_torch_generator

        while not self._stop.is_set():
            batch = [(r, c, f) for r, c, f in self._take_batch() if f.set_running_or_notify_cancel()]
            if not batch:
                continue
            self.batches.append(len(batch))
            reqs = [r for r, _, _ in batch]
            # choice c of a seeded request samples from its own stream: batching never changes it
            gens = [
                record_torch_generator(None if r.seed is None else derive_seed(r.seed, "serve"), c) for r, c, _ in batch
            ]
            try:
                results = run_local(self.generator, reqs, gens)
                results = [
                    res
                    if isinstance(res, RecordError)
                    else (
                        res,
                        None if r.logprobs is None else token_logprobs(self.generator, r.prompt, res.text, r.logprobs),
                    )
                    for r, res in zip(reqs, results)
                ]
            except Exception as e:  # noqa: BLE001 - report to every waiting client, keep serving
                logger.warning(f"serve: generation failed ({type(e).__name__}: {str(e)[:200]})")
                err = ServiceError(500, "generation failed", "server_error")
                for _, _, fut in batch:
                    fut.set_exception(err)
                continue
            for (_, _, fut), res in zip(batch, results):
                fut.set_result(res)

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the worker; True when it is still busy with a batch after ``timeout`` seconds."""
        self._stop.set()
        self._worker.join(timeout=timeout)
        return self._worker.is_alive()

"""Test and benchmark helpers: a tiny random causal LM, a model-free echo service and a loopback
server with scripted faults (429, 500, dropped connections, slow responses).

Nothing in the production path imports this module; `ppt serve` uses ``ppt.remote.server`` directly.
Fault injection lives here, as a handler subclass, so the real server stays free of test hooks.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppt.remote.server import OpenAIHandler, OpenAIServer, Service, ServiceError, start_server

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_CORPUS = (
    "Your task is to extend the Prefix Text. Use the Perturbed Generation as your primary writing material. "
    "The quick brown fox jumps over the lazy dog. A patient reports pain after running; the clinic is open. "
    "Please summarize this note about a payment and a due date. Provide only your continuation and extended text."
)


def make_tiny_causal_lm(path: str | Path, *, chat_template: bool = True, seed: int = 0, vocab_size: int = 320) -> Path:
    """Save a random 2-layer Llama (hidden 32) with a byte-level BPE tokenizer to ``path``; return it
    (an existing one is reused).

    Loads with ``ppt.models.load_causal_lm(str(path))``. Outputs are gibberish but real: tokenization,
    chat template, padding, attention masks and sampling all run as with a real model.
    """
    if (Path(path) / "config.json").is_file() and (Path(path) / "tokenizer.json").is_file():
        return Path(path)
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from ppt.models._quiet import quiet_loading

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    specials = ["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([_CORPUS] * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    if chat_template:
        fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                      bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id)
    model = LlamaForCausalLM(cfg)
    model.generation_config.eos_token_id = [fast.eos_token_id, fast.convert_tokens_to_ids("<|im_end|>")]
    with quiet_loading(progress=False):
        fast.save_pretrained(path)
        model.save_pretrained(path)
    return path


# ---------------------------------------------------------------------- a model-free service


class EchoService(Service):
    """Answers ``echo <sha8 of the prompt>: <first words>`` after ``delay_s`` seconds (plus up to
    ``jitter_s``, fixed per prompt); records bodies and counts answers per prompt.

    Deterministic and instant (unless delayed), so client behaviour can be tested without a model.
    """

    def __init__(self, delay_s: float = 0.0, jitter_s: float = 0.0, name: str = "echo") -> None:
        self.delay_s, self.jitter_s, self.name = delay_s, jitter_s, name
        self.lock = threading.Lock()
        self.bodies: list[dict] = []
        self.answered: collections.Counter[str] = collections.Counter()

    def complete(self, body: dict, kind: str, gone: Any = None) -> dict:
        with self.lock:
            self.bodies.append(body)
        prompt = body.get("prompt") if kind == "completions" else "\n".join(
            str(m.get("content", "")) for m in body.get("messages", []))
        if not isinstance(prompt, str):
            raise ServiceError(400, "prompt must be a string", "invalid_request_error")
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
        delay = self.delay_s + self.jitter_s * (int(digest, 16) % 100) / 100
        if delay:
            time.sleep(delay)
        text = f"echo {digest}: " + " ".join(prompt.split()[:6])
        with self.lock:
            self.answered[digest] += 1
        n_prompt = len(prompt.split())
        return {"text": text, "finish_reason": "stop",
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(text.split()),
                          "total_tokens": n_prompt + len(text.split())}}


# ---------------------------------------------------------------------- fault injection


@dataclass
class Fault:
    """One scripted misbehaviour: ``status`` (e.g. 429, 500) with optional Retry-After seconds, ``drop``
    (close the connection without a response) or ``delay_s`` before answering normally."""

    status: int | None = None
    retry_after: float | None = None
    drop: bool = False
    delay_s: float = 0.0


@dataclass
class FaultPlan:
    """Faults applied to requests in arrival order (then none); thread-safe; counts what happened."""

    script: list[Fault | None] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: int = 0
    injected: collections.Counter = field(default_factory=collections.Counter)
    headers: list[dict] = field(default_factory=list)

    def next(self) -> Fault | None:
        with self.lock:
            self.seen += 1
            return self.script.pop(0) if self.script else None

    def extend(self, faults: Iterable[Fault | None]) -> None:
        with self.lock:
            self.script.extend(faults)


class FaultyHandler(OpenAIHandler):
    """OpenAIHandler that consults ``server.faults`` (a FaultPlan) before answering each POST."""

    def handle_post(self, path: str, raw: bytes) -> None:
        plan: FaultPlan | None = getattr(self.server, "faults", None)
        if plan is not None and self._inject(plan):
            return
        super().handle_post(path, raw)

    def _inject(self, plan: FaultPlan) -> bool:
        """Apply the next scripted fault; True when it replaced the normal response."""
        with plan.lock:
            plan.headers.append({k.lower(): v for k, v in self.headers.items()})
        fault = plan.next()
        if fault is None:
            return False
        if fault.delay_s:
            with plan.lock:
                plan.injected["delay"] += 1
            time.sleep(fault.delay_s)
        if fault.drop:
            with plan.lock:
                plan.injected["drop"] += 1
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return True
        if fault.status is not None:
            with plan.lock:
                plan.injected[str(fault.status)] += 1
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            self.send_json(fault.status, {"error": {"message": "injected fault", "type": "injected",
                                                     "code": str(fault.status)}}, headers)
            return True
        return False


@contextlib.contextmanager
def loopback(service: Service, faults: FaultPlan | None = None, **kwargs: Any) -> Iterator[tuple[OpenAIServer, str]]:
    """Serve ``service`` on 127.0.0.1 with an ephemeral port in a thread; yield (server, base_url)."""
    server, thread = start_server(service, host="127.0.0.1", port=0, handler=FaultyHandler, **kwargs)
    server.faults = faults  # type: ignore[attr-defined]
    try:
        yield server, server.base_url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

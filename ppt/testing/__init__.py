"""Test and benchmark helpers: tiny random models and tokenizers, model-free fakes (a LanguageModel
and an echo service) and a loopback server with scripted faults. Production code never imports this.

    models.py     make_tiny_causal_lm (a saved model directory), tiny_llama, tiny_bert, tokenizer builders
    fakes.py      FakeLM, EchoService
    loopback.py   Fault, FaultPlan, FaultyHandler, loopback
"""

from __future__ import annotations

from ppt.testing.fakes import EchoService, FakeLM
from ppt.testing.loopback import Fault, FaultPlan, FaultyHandler, loopback
from ppt.testing.models import (
    CHAT_TEMPLATE,
    bert_tokenizer,
    bpe_tokenizer,
    make_tiny_causal_lm,
    tiny_bert,
    tiny_llama,
    word_tokenizer,
    wordpiece_tokenizer,
)

__all__ = [
    "CHAT_TEMPLATE",
    "EchoService",
    "FakeLM",
    "Fault",
    "FaultPlan",
    "FaultyHandler",
    "bert_tokenizer",
    "bpe_tokenizer",
    "loopback",
    "make_tiny_causal_lm",
    "tiny_bert",
    "tiny_llama",
    "word_tokenizer",
    "wordpiece_tokenizer",
]

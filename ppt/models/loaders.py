"""Load tokenizers, causal LMs and masked LMs by name (local path > offline alias > hub id).

All loads run inside ``quiet_loading`` (library prints go to stderr, transformers logs errors only).
Offline aliases are verified against their pinned sha256 values before first use. Hub ids are passed to
``from_pretrained`` unchanged; when that fails (no network, HF_HUB_OFFLINE=1) the error says so and
lists the aliases that work offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ppt.models._quiet import quiet_loading
from ppt.models.registry import verify_asset
from ppt.models.resolve import Resolved, offline_error, resolve

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "tokenizer.model",
    "vocab.json",
    "spiece.model",
)


def _ppt_error(message: str, hint: str | None = None):
    from ppt.io import ExitCode, PptError

    return PptError(message, exit_code=ExitCode.CONFIG, hint=hint)


def _is_gguf(r: Resolved) -> bool:
    """A causal LM that needs GGUF conversion: a gguf alias, a .gguf file, or a dir holding only a GGUF."""
    if r.source == "alias":
        return r.asset.kind == "causal-lm"
    if r.source == "path" and r.path is not None:
        if r.path.is_file():
            return r.path.suffix == ".gguf"
        return not (r.path / "config.json").exists() and any(r.path.glob("*.gguf"))
    return False


def _target(r: Resolved, want_kinds: tuple[str, ...], what: str) -> str:
    """The from_pretrained argument for a non-GGUF name (verifying an alias's files first)."""
    if r.source == "alias":
        if r.asset.kind not in want_kinds:
            raise _ppt_error(
                f"{r.asset.alias} is a {r.asset.kind} model, not a {what}",
                hint="see `ppt models ls` for what each alias is",
            )
        path = r.require_installed()
        verify_asset(r.asset.alias)
        return str(path)
    if r.source == "path":
        if r.path.is_file():
            raise _ppt_error(f"{r.path}: expected a model directory (or a .gguf file), got a file")
        return str(r.path)
    return r.hub_id


def from_pretrained(cls, r: Resolved, target: str, **kwargs):
    """``cls.from_pretrained(target, **kwargs)`` quietly; errors become PptError."""
    try:
        with quiet_loading():
            return cls.from_pretrained(target, **kwargs)
    except Exception as e:  # noqa: BLE001 - transformers/hub raise OSError, ValueError, HTTP errors...
        from ppt.io import PptError

        if isinstance(e, PptError):
            raise
        if r.source == "hub":
            raise offline_error(r.hub_id, e) from None
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise _ppt_error(
            f"cannot load {r.name!r} with {cls.__name__}: {first}",
            hint="a local model directory needs config.json, weights and tokenizer files",
        ) from None


def _finish_causal_tokenizer(tok):
    """Generation needs left padding and a pad token."""
    if getattr(tok, "pad_token", None) is None:
        if tok.eos_token is not None:
            tok.pad_token = tok.eos_token
        elif getattr(tok, "unk_token", None) is not None:
            tok.pad_token = tok.unk_token
    tok.padding_side = "left"
    return tok


def load_tokenizer(name: str):
    """A tokenizer for ``name``.

    tiktoken aliases (cl100k_base, o200k_base, r50k_base, gpt2) give a ``tiktoken.Encoding``; model
    aliases, paths and hub ids give a transformers tokenizer (a GGUF's tokenizer comes from the cache).
    """
    r = resolve(name)
    if r.source == "alias" and r.asset.kind == "tiktoken":
        from ppt.models.tiktoken_offline import get_encoding

        return get_encoding(r.asset.alias)
    from transformers import AutoTokenizer

    if _is_gguf(r):
        from ppt.models.gguf import tokenizer_dir

        tok = from_pretrained(AutoTokenizer, r, str(tokenizer_dir(r)))
        return _finish_causal_tokenizer(tok)
    target = _target(r, ("sentence-encoder", "masked-lm", "causal-lm"), "tokenizer")
    return from_pretrained(AutoTokenizer, r, target)


def load_causal_lm(name: str, device: Any = "auto", dtype: Any = None):
    """``(model.eval(), tokenizer)`` for a causal LM; tokenizer padded on the left with a pad token.

    ``smollm2`` / ``gemma3-270m`` / a ``.gguf`` file: the first load converts the GGUF into a
    safetensors checkpoint in the ppt cache (seconds), later loads read that (sub-second).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ppt.models.device import resolve_device, resolve_dtype

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    r = resolve(name)
    kwargs = {"dtype": dt} if dt is not None else {}
    if _is_gguf(r):
        from ppt.models.gguf import converted_model_dir

        target = str(converted_model_dir(r))
        r_local = Resolved(name=r.name, source="path", path=Path(target))
        model = from_pretrained(AutoModelForCausalLM, r_local, target, **kwargs)
        tok = from_pretrained(AutoTokenizer, r_local, target)
    else:
        target = _target(r, ("causal-lm",), "causal LM")
        model = from_pretrained(AutoModelForCausalLM, r, target, **kwargs)
        tok = from_pretrained(AutoTokenizer, r, target)
    tok = _finish_causal_tokenizer(tok)
    if getattr(model.config, "pad_token_id", None) is None and tok.pad_token_id is not None:
        model.config.pad_token_id = tok.pad_token_id
        if getattr(model, "generation_config", None) is not None and model.generation_config.pad_token_id is None:
            model.generation_config.pad_token_id = tok.pad_token_id
    return model.to(dev).eval(), tok


def load_masked_lm(name: str = "splade-tiny", device: Any = "auto", dtype: Any = None):
    """``(model.eval(), tokenizer)`` for a masked LM (AutoModelForMaskedLM): ``splade-tiny``, a path
    or a hub id."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from ppt.models.device import resolve_device, resolve_dtype

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    r = resolve(name)
    target = _target(r, ("masked-lm",), "masked LM")
    kwargs = {"dtype": dt} if dt is not None else {}
    model = from_pretrained(AutoModelForMaskedLM, r, target, **kwargs)
    tok = from_pretrained(AutoTokenizer, r, target)
    return model.to(dev).eval(), tok


def load_model_input_embeddings(name: str):
    """``(weight [V, d] float32 on CPU, tokenizer)``: a model's input embedding matrix (for spaces)."""
    import torch

    r = resolve(name)
    if r.source == "alias" and r.asset.kind == "masked-lm":
        model, tok = load_masked_lm(name, device="cpu")
    elif _is_gguf(r) or (r.source == "alias" and r.asset.kind == "causal-lm"):
        model, tok = load_causal_lm(name, device="cpu")
    else:
        from transformers import AutoModel, AutoTokenizer

        target = _target(r, ("sentence-encoder", "masked-lm", "causal-lm"), "model with input embeddings")
        model = from_pretrained(AutoModel, r, target)
        tok = from_pretrained(AutoTokenizer, r, target)
    weight = model.get_input_embeddings().weight.detach().to(torch.float32).cpu()
    n = len(tok)
    if weight.shape[0] > n:  # padded embedding tables: keep the rows the tokenizer can produce
        weight = weight[:n]
    return weight.contiguous(), tok

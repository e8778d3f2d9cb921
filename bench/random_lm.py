"""Causal LMs of a named model's shape with seeded random weights, built from its config and tokenizer
alone: no weights are read, so the benches' ``--random-weights`` runs where the packaged weights (98 MB+)
cannot be carried, e.g. a GPU server fed by ``scripts/gpu_kit.sh``.

Where the config and tokenizer come from, first found:
- ``name`` itself, when it is a directory holding ``config.json`` (and tokenizer files);
- ``$PPT_LM_CONFIGS/<name>/`` (``scripts/gpu_kit.sh`` packs one such directory per LM alias);
- a GGUF alias or file: its converted checkpoint in the ppt cache (only config and tokenizer files are
  read), else the GGUF's metadata and vocabulary (the carrier must be installed);
- any other alias, path or hub id: ``AutoConfig`` and ppt's tokenizer loader.

    python bench/random_lm.py save smollm2 /tmp/smollm2-shape   # config + tokenizer, no weights
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

LM_CONFIGS_ENV = "PPT_LM_CONFIGS"


def config_dir(name: str) -> Path | None:
    """A directory with ``name``'s config.json and tokenizer files whose weights need not be read, or None."""
    p = Path(name).expanduser()
    if p.is_dir() and (p / "config.json").is_file():
        return p
    root = os.environ.get(LM_CONFIGS_ENV)
    if root and (Path(root) / name / "config.json").is_file():
        return Path(root) / name
    try:
        from ppt.models.loaders import _is_gguf
        from ppt.models.resolve import resolve

        r = resolve(name)
        if not _is_gguf(r):
            return None
        from ppt.models.gguf import GgufSource

        src = GgufSource(r)
        art = src.cache.lookup(src.kind("model"), src.deps(), deep=False)
    except Exception:  # noqa: BLE001 - any failure here falls back to config_and_tokenizer's other routes
        return None
    return art.path if art is not None and (art.path / "config.json").is_file() else None


def config_and_tokenizer(name: str) -> tuple[Any, Any, Any]:
    """(config, tokenizer padded on the left with a pad token, generation config or None) of ``name``."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    from ppt.models._quiet import quiet_loading
    from ppt.models.loaders import _finish_causal_tokenizer

    d = config_dir(name)
    if d is not None:
        with quiet_loading(progress=False):
            cfg = AutoConfig.from_pretrained(str(d))
            tok = AutoTokenizer.from_pretrained(str(d))
            gen = GenerationConfig.from_pretrained(str(d)) if (d / "generation_config.json").is_file() else None
        return cfg, _finish_causal_tokenizer(tok), gen
    from ppt.models import load_tokenizer
    from ppt.models.loaders import _is_gguf, _target
    from ppt.models.resolve import resolve

    r = resolve(name)
    with quiet_loading(progress=False):
        if _is_gguf(r):
            from ppt.models.gguf import GgufSource

            cfg = GgufSource(r).with_file(lambda directory, f: AutoConfig.from_pretrained(str(directory), gguf_file=f))
        else:
            cfg = AutoConfig.from_pretrained(_target(r, ("causal-lm",), "causal LM"))
    tok = load_tokenizer(name)
    return cfg, tok, None


def random_causal_lm(
    name: str, *, layers: int | None = None, seed: int = 0, device: Any = "cpu", dtype: Any = None
) -> tuple[Any, Any]:
    """(model in eval mode, tokenizer): ``name``'s architecture (``layers`` layers when given) with weights
    drawn by ``torch.manual_seed(seed)``, on ``device`` in ``dtype`` (None: the config's own)."""
    import torch
    from transformers import AutoModelForCausalLM

    from ppt.models._quiet import quiet_loading
    from ppt.models.device import resolve_device, resolve_dtype

    cfg, tok, gen = config_and_tokenizer(name)
    if layers:
        cfg.num_hidden_layers = layers
        if isinstance(getattr(cfg, "layer_types", None), list):  # per-layer attention kinds (Gemma 3 and others)
            cfg.layer_types = cfg.layer_types[:layers]
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev) if dtype is not None else None
    torch.manual_seed(seed)
    with quiet_loading(progress=False):
        model = AutoModelForCausalLM.from_config(cfg)
    model = model.to(dev, dtype=dt) if dt is not None else model.to(dev)
    if gen is not None:
        model.generation_config = gen
    model.config._name_or_path = f"{name} (random weights{f', {layers} layers' if layers else ''})"
    if getattr(model.config, "pad_token_id", None) is None and tok.pad_token_id is not None:
        model.config.pad_token_id = tok.pad_token_id
        if model.generation_config.pad_token_id is None:
            model.generation_config.pad_token_id = tok.pad_token_id
    return model.eval(), tok


def save(name: str, out: str | Path) -> Path:
    """Write ``name``'s config, generation config and tokenizer (never weights) to ``out``."""
    from transformers import GenerationConfig

    cfg, tok, gen = config_and_tokenizer(name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    (gen or GenerationConfig.from_model_config(cfg)).save_pretrained(str(out))
    for p in out.rglob("*"):
        if p.is_file():
            p.chmod(0o644)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "save":
        raise SystemExit("usage: python bench/random_lm.py save NAME OUT_DIR")
    print(save(sys.argv[2], sys.argv[3]))

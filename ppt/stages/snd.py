"""Stage: ``ppt snd embed`` — Split-N-Denoise embeddings for each record's text.

The client half (tokenizer, input-embedding table, noise, clip, denoiser) runs here; the server half runs
in-process or behind ``ppt snd serve`` (an ``SndClient``), which receives only privatized rows. Vectors go
into the record as float lists (``snd_noisy`` / ``snd_denoised``) or, for big jobs, into ``.npy`` /
Parquet files, the record then carrying its row index (``snd_row``). Every record gets an ``snd`` stamp:
what the noise guarantees (``ppt.snd.privacy``), the model (id and hash), the denoiser (content hash),
where the server half ran, and whether the run was seeded.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ppt.io import ExitCode, PptError, Record, RecordError, stamp
from ppt.rng import record_generator, seeded
from ppt.samplers.dchi import check_eta
from ppt.stages.base import Stage

EMITS = ("noisy", "denoised", "clean")  # clean: in-process, for evaluation (ppt eval mi) only


def weak_noise(eta: float, dim: int, bound: float) -> bool:
    """Warn (LeakWarning) when what goes to the server carries noise smaller than the tokens it hides: the noise's
    mean norm d/eta below the clip radius C, where nearest-token inversion reads most tokens back (docs/snd: 18.7%
    at eta 100, 100% at eta 500 on minilm, d 384, C 1.694). Returns whether it warned."""
    from ppt.log import LeakWarning, warn

    if math.isinf(eta) or dim / eta >= bound:
        return False
    warn(
        f"eta = {eta:g}: the noise's mean norm d/eta = {dim / eta:.3g} is below the largest token norm "
        f"C = {bound:.3g}; `ppt attack snd-inversion` reads most tokens back from what the server receives",
        LeakWarning,
    )
    return True


class SndEmbedStage(Stage):
    name = "snd"
    private_output = True  # embeddings of private text: the output file is created 0600

    def __init__(
        self,
        load_split: Callable[[], Any],
        *,
        eta: float,
        seed: int | None = None,
        denoiser: str | None = None,
        pool: Any = None,
        server: str = "in-process",
        emit: tuple[str, ...] = EMITS,
        fmt: str = "jsonl",
        vectors: str | None = None,
        field_prefix: str = "snd_",
        device: Any = "auto",
    ) -> None:
        try:
            self.eta = check_eta(eta)
        except ValueError as e:
            raise PptError(str(e), ExitCode.USAGE) from None
        bad = [e for e in emit if e not in EMITS]
        if bad or not emit:
            raise PptError(f"--emit takes a comma-separated subset of {', '.join(EMITS)}", ExitCode.USAGE)
        if "denoised" in emit and denoiser is None and not math.isinf(self.eta):
            raise PptError(
                "--emit denoised needs --denoiser (a directory, a cache key, or auto)",
                ExitCode.USAGE,
                hint="train one with `ppt snd train-denoiser`, or pass --emit noisy",
            )
        if pool is not None and math.isinf(self.eta):
            raise PptError(
                "eta = inf sends the clean token embeddings: refused with --server",
                ExitCode.USAGE,
                hint="pick a finite --eta; eta = inf is for in-process baselines only",
            )
        if fmt != "jsonl" and not vectors:
            raise PptError(f"--format {fmt} needs --vectors PREFIX (where the vector files go)", ExitCode.USAGE)
        self.load_split, self.seed, self.denoiser_ref, self.pool, self.server = load_split, seed, denoiser, pool, server
        self.emit, self.fmt, self.vectors, self.prefix, self.device = tuple(emit), fmt, vectors, field_prefix, device
        self.split: Any = None
        self.denoiser: Any = None
        self.sink: Any = None
        self._block: dict[str, Any] = {}

    def prepare(self) -> None:
        if self.split is not None:
            return
        from ppt.snd import store
        from ppt.snd.privacy import snd_fields, snd_privacy

        self.split = self.load_split()
        den_info = None
        if self.pool is not None:
            weak_noise(self.eta, self.split.dim, self.split.bound)
            info = self.pool.info()
            if info.get("model_hash") != self.split.hash:
                raise PptError(
                    f"the snd server runs another model (hash {str(info.get('model_hash'))[:16]}, "
                    f"local {self.split.hash})",
                    ExitCode.CONFIG,
                    hint="run the client and `ppt snd serve` with the same --model",
                )
        if self.denoiser_ref is not None and "denoised" in self.emit and not math.isinf(self.eta):
            path = store.resolve_ref(self.denoiser_ref, self.split.hash, self.eta)
            self.denoiser, meta, h = store.load(path, device=self.split.device)
            if meta.get("model", {}).get("hash") != self.split.hash:
                raise PptError("the denoiser was trained for another model", ExitCode.CONFIG)
            if not math.isclose(float(meta.get("eta", "nan")), self.eta, rel_tol=1e-9):
                raise PptError(
                    f"the denoiser was trained for eta {meta.get('eta')}, not {self.eta:g}",
                    ExitCode.CONFIG,
                    hint="train one for this eta, or pass the matching --eta",
                )
            den_info = {
                "hash": h,
                "eta": meta.get("eta"),
                "arch": {k: meta["config"].get(k) for k in ("width", "layers", "heads", "ff", "max_len")},
            }
        if self.fmt != "jsonl":
            from ppt.snd.vectors import VectorSink

            self.sink = VectorSink(self.vectors, self.fmt, list(self.emit), self.split.out_dim)
        d = self.split.describe()
        self._block = {
            "model": {"id": d["id"], "hash": d["hash"], "pooling": d["pooling"]},
            "privacy": snd_fields(
                snd_privacy(self.eta, self.split.bound, self.split.dim, d), self.prefix, list(self.emit), self.fmt
            ),
            "server": self.server,
            "denoiser": den_info,
            "emit": list(self.emit),
            "seeded": seeded(self.seed),
        }

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name, "eta": self.eta, "emit": list(self.emit), **self._block}

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        from ppt.snd.pipeline import snd_embed

        self.prepare()
        results: list[Any] = [None] * len(records)
        todo = []
        for i, rec in enumerate(records):
            clash = [f for f in self._fields() if f in rec.data]
            if clash:
                results[i] = RecordError("field_conflict", f"field '{clash[0]}' already exists; pass --field-prefix")
            else:
                todo.append(i)
        if not todo:
            return results
        gens = [record_generator(self.seed, records[i].id, "snd") for i in todo]
        batch = snd_embed(
            self.split,
            [records[i].text for i in todo],
            self.eta,
            gens,
            pool=self.pool,
            denoiser=self.denoiser if "denoised" in self.emit else None,
        )
        vecs = {"noisy": batch.noisy, "denoised": batch.denoised if batch.denoised is not None else batch.noisy}
        if "clean" in self.emit:  # never sent anywhere: the local model's own output, for evaluation
            vecs["clean"] = self.split.server_pool(batch.clean_rows)
        first = None
        if self.sink is not None:
            first = self.sink.write([records[i].id for i in todo], {k: vecs[k].numpy() for k in self.emit})
        for j, i in enumerate(todo):
            data = dict(records[i].data)
            if first is None:
                for k in self.emit:
                    data[self.prefix + k] = vecs[k][j].tolist()
            else:
                data[self.prefix + "row"] = first + j
            results[i] = stamp(data, "snd", {**self._block, "n_tokens": int(batch.noisy_rows[j].shape[0])})
        return results

    def _fields(self) -> list[str]:
        return [self.prefix + k for k in self.emit] if self.fmt == "jsonl" else [self.prefix + "row"]

    def finish(self) -> dict[str, str] | None:
        """Close the vector files (call after the stream ran); their paths."""
        if self.sink is None:
            return None
        sink, self.sink = self.sink, None
        return sink.close()

    def abort(self) -> None:
        if self.sink is not None:
            self.sink.abort()
            self.sink = None


def read_texts(path: str, text_field: str = "text", limit: int | None = None) -> list[str]:
    """The text field of each JSONL line (a public corpus); errors name the line, never its content."""
    from ppt.io.jsonl import open_side_file, read_objects

    texts: list[str] = []
    with open_side_file(path, "the corpus") as fh:
        for n, rec in read_objects(fh, path):
            text = rec.get(text_field)
            if not isinstance(text, str) or not text.strip():
                raise PptError(f"{path}: line {n} has no non-empty string field '{text_field}'", ExitCode.DATAERR)
            texts.append(text)
            if limit is not None and len(texts) >= limit:
                break
    return texts


def train_and_store(
    split: Any,
    texts: list[str],
    cfg: Any,
    *,
    out_dir: str | None = None,
    checkpoint_dir: str | None = None,
    resume: bool = False,
    quiet: bool = False,
    on_epoch: Callable[[dict], None] | None = None,
) -> dict[str, Any]:
    """Train a denoiser (or find it already cached) and store it; the JSON summary ``train-denoiser`` prints.

    Checkpoints go to ``checkpoint_dir`` or, by default, to a build directory in the cache root
    (``.snd-train-<key>``, listed by ``ppt cache ls`` while it exists), removed once the denoiser is stored."""
    import shutil
    from pathlib import Path

    from ppt.cache import Cache, artifact_key
    from ppt.snd import store
    from ppt.snd.denoiser import DenoiserConfig
    from ppt.snd.train import corpus_hash, train_denoiser

    arch_cfg = DenoiserConfig(in_dim=split.dim, out_dim=split.out_dim, **{"max_len": split.max_length, **cfg.arch})
    deps = store.artifact_deps(split.hash, split.name, cfg.eta, arch_cfg, cfg.recipe(corpus_hash(texts), len(texts)))
    cache = Cache()
    if out_dir is None:
        hit = cache.lookup(store.KIND, deps)
        if hit is not None:
            return {
                "denoiser": str(hit.path),
                "key": hit.key,
                "hash": hit.content_hash,
                "cached": True,
                "eta": cfg.eta,
                "model": split.describe(),
            }
    key = artifact_key(store.KIND, deps)
    ckdir = Path(checkpoint_dir) if checkpoint_dir else cache.root / f".snd-train-{key}"
    res = train_denoiser(split, texts, cfg, checkpoint_dir=ckdir, resume=resume, quiet=quiet, on_epoch=on_epoch)
    meta = {
        "config": res.config.to_dict(),
        "eta": cfg.eta,
        "model": split.describe(),
        "history": res.history,
        "train_seconds": round(res.seconds, 2),
        "device": str(split.device),
        "n_texts": len(texts),
        "resumed_from": res.resumed_from,
    }
    if out_dir is not None:
        path = store.save_dir(Path(out_dir), res.model, deps, meta)
        from ppt.cache import Artifact, read_manifest

        summary = {
            "denoiser": str(path),
            "hash": Artifact(store.KIND, path.name, path, read_manifest(path)).content_hash,
        }
    else:
        art = store.save_cached(res.model, deps, meta, cache)
        summary = {"denoiser": str(art.path), "key": art.key, "hash": art.content_hash}
    if not checkpoint_dir:
        shutil.rmtree(ckdir, ignore_errors=True)
    last = res.history[-1] if res.history else {}
    return {
        **summary,
        "cached": False,
        "eta": cfg.eta,
        "model": split.describe(),
        "epochs": len(res.history),
        "train_seconds": round(res.seconds, 2),
        "device": str(split.device),
        "n_texts": len(texts),
        "last_epoch": last,
    }


class SndInversionStage(Stage):
    """``ppt attack snd-inversion``: privatize each record's token rows as ``ppt snd embed`` does (same
    per-record stream, so with the same --seed these are the rows the server saw) and invert them to the
    nearest vocabulary rows; per-record top-1/top-k rates, pooled rates with intervals in the summary."""

    name = "attack"

    def __init__(
        self,
        load_split: Callable[[], Any],
        *,
        eta: float,
        seed: int | None = None,
        k: int = 10,
        result_field: str = "attack",
        ci_method: str = "wilson",
        confidence: float = 0.95,
    ) -> None:
        from ppt.attacks.snd_inversion import METHODS

        try:
            self.eta = check_eta(eta)
        except ValueError as e:
            raise PptError(str(e), ExitCode.USAGE) from None
        if ci_method not in METHODS:
            raise PptError(f"--ci must be one of {', '.join(METHODS)}", ExitCode.USAGE)
        self.load_split, self.seed, self.k, self.result_field = load_split, seed, max(1, int(k)), result_field
        self.ci_method, self.confidence = ci_method, confidence
        self.split: Any = None
        self.special: Any = None
        self.counts = {"top1": 0, "topk": 0, "n": 0, "records": 0}

    def prepare(self) -> None:
        if self.split is None:
            import torch

            self.split = self.load_split()
            special = getattr(self.split.tokenizer, "all_special_ids", []) or []
            self.special = torch.tensor(sorted(set(special)), dtype=torch.long)

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        import torch

        from ppt.attacks.snd_inversion import hits, nearest_rows
        from ppt.snd.pipeline import privatize_rows

        self.prepare()
        results: list[Any] = []
        tr = self.split.client_rows([r.text for r in records])
        gens = [record_generator(self.seed, r.id, "snd") for r in records]
        noisy, _ = privatize_rows(tr.rows, self.eta, gens, self.split.bound)
        ids = torch.tensor([i for x in tr.ids for i in x], dtype=torch.long)
        keep = ~torch.isin(ids, self.special)
        ranked = nearest_rows(torch.cat(noisy), self.split.table, k=self.k)
        h = hits(ids, ranked, (1, self.k))
        owner = torch.repeat_interleave(torch.arange(len(records)), torch.tensor([len(x) for x in tr.ids]))
        for j, rec in enumerate(records):
            m = keep & (owner == j)
            n, h1, hk = int(m.sum()), int(h[1][m].sum()), int(h[self.k][m].sum())
            self.counts["top1"] += h1
            self.counts["topk"] += hk
            self.counts["n"] += n
            self.counts["records"] += 1
            data = dict(rec.data)
            box = data.get(self.result_field)
            if box is not None and not isinstance(box, dict):
                results.append(RecordError("field_conflict", f"field '{self.result_field}' is not an object"))
                continue
            box = dict(box or {})
            box["snd-inversion"] = {"top1": h1 / n if n else None, f"top{self.k}": hk / n if n else None, "n_tokens": n}
            data[self.result_field] = box
            results.append(data)
        return results

    def summary(self) -> dict[str, Any]:
        from ppt.attacks.snd_inversion import rate_ci

        c = self.counts
        d = self.split.describe() if self.split is not None else {}
        return {
            "attack": "snd-inversion",
            "eta": self.eta,
            "model": {"id": d.get("id"), "hash": d.get("hash")},
            "records": c["records"],
            "tokens": c["n"],
            "special_tokens": "excluded",
            "top1": rate_ci(c["top1"], c["n"], self.confidence, self.ci_method),
            f"top{self.k}": rate_ci(c["topk"], c["n"], self.confidence, self.ci_method),
            "seeded": seeded(self.seed),
        }


def read_lines(path: str) -> list[bytes]:
    from ppt.io.jsonl import read_file_lines

    return read_file_lines(path)


def read_vectors(
    lines: list[bytes], x_field: str, y_field: str, limit: int | None = None, where: str = "input"
) -> tuple[Any, Any]:
    """Two ``[n, d]`` float64 arrays from JSONL fields holding float lists (every record has both)."""
    import numpy as np

    from ppt.io.jsonl import read_objects

    xs, ys = [], []
    for n, rec in read_objects(lines, where):
        for field, out in ((x_field, xs), (y_field, ys)):
            v = rec.get(field)
            if not isinstance(v, list) or not v:
                raise PptError(f"{where}: line {n} has no vector field '{field}'", ExitCode.DATAERR)
            out.append(v)
        if limit is not None and len(xs) >= limit:
            break
    try:
        return np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    except ValueError:
        raise PptError(f"{where}: the vectors of a field do not all have the same length", ExitCode.DATAERR) from None


def mutual_information(x: Any, y: Any, k: int = 3) -> dict[str, Any]:
    """What ``ppt eval mi`` prints: the KSG estimate with its sizes and its caveat."""
    from ppt.metrics.mi import ksg_mi

    if x.shape[0] != y.shape[0]:
        raise PptError(f"x has {x.shape[0]} rows and y has {y.shape[0]}", ExitCode.DATAERR)
    if x.shape[0] <= k:
        raise PptError(f"need more than k={k} records", ExitCode.DATAERR)
    return {
        "mi_nats": ksg_mi(x, y, k=k),
        "estimator": "KSG algorithm 1 (Kozachenko-Leonenko neighbours, max-norm)",
        "k": k,
        "n": int(x.shape[0]),
        "dim_x": int(x.shape[1]),
        "dim_y": int(y.shape[1]),
        "caveat": "biased towards 0 in high dimension and capped near log(n): compare settings at equal n",
    }

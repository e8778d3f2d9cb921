"""Record-level attack runners (the library behind `ppt attack`, usable from batch jobs too).

Each runner takes a batch of :class:`ppt.io.Record` and returns one dict (or RecordError) per record:
the record with its result merged into ``result_field`` (default ``attack``) under the attack's name and
a ``ppt.attack_<name>`` stamp; tallies for the summary accumulate on the runner.

Spaces: the sanitizing mechanism's space is read from the record's ``ppt.sanitize`` stamp (its
signature, or ``params.space`` under ``--stamp full``; :func:`ppt.mechanisms.signature.stamp_view`); ``space`` overrides it for the attack (the KNN "another space" case:
alignment rows are then mapped through their vocabulary strings).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ppt.attacks.summary import Tally, record_block
from ppt.io import ExitCode, PptError, Record, RecordError, stamp, stamp_block
from ppt.stages.base import Stage

STOPWORD_MODES = ("auto", "include", "exclude")


def stamp_view(block: dict) -> dict:
    from ppt.mechanisms.signature import stamp_view as view  # lazy: ppt.mechanisms imports torch

    return view(block)


def sanitize_block(data: dict) -> dict:
    return stamp_block(data, "sanitize") or {}


def stamped_space(data: dict) -> str | None:
    """The space the record was sanitized in, from its ppt.sanitize stamp, compact (signature) or full
    (params) (None when absent)."""
    view = stamp_view(sanitize_block(data))
    if view["space"]:
        return view["space"]
    if isinstance(view["model"], str) and mechanism_attribute(view["mechanism"], "rows_in_model_space"):
        return view["model"]  # e.g. Cape: its rows are its context model's token ids (input-embedding space)
    return None


def stamped_keeps_stopwords(data: dict) -> bool:
    """Whether the sanitizer kept stopwords verbatim: the stamp's policy, else the mechanism's own default
    (read from the mechanism, so a plug-in that keeps them is treated like CusText+ and Cape)."""
    view = stamp_view(sanitize_block(data))
    if view["stopwords"] is not None:
        return view["stopwords"] == "keep"
    return default_stopwords(view["mechanism"]) == "keep"


def mechanism_attribute(mechanism: str | None, attr: str) -> Any:
    """A class attribute of the mechanism a stamp names (None when it is unknown here): what the attack
    needs to know of a mechanism, the mechanism says."""
    if not mechanism:
        return None
    from ppt.mechanisms import mechanism_class

    try:
        return getattr(mechanism_class(mechanism), attr, None)
    except (KeyError, ImportError):
        return None


def default_stopwords(mechanism: str | None) -> str | None:
    """The stopword rule of ``mechanism``'s default policy (None when the mechanism is unknown here)."""
    return getattr(mechanism_attribute(mechanism, "default_policy"), "stopwords", None)


def merge_result(data: dict, result_field: str, name: str, result: dict, stage_block: dict) -> dict | RecordError:
    out = dict(data)
    existing = out.get(result_field)
    if existing is None:
        existing = {}
    elif not isinstance(existing, dict):
        return RecordError("field_conflict", f"field {result_field!r} exists and is not an object; use --result-field")
    out[result_field] = {**existing, name: result}
    return stamp(out, f"attack_{name}", stage_block)


class SpaceCache:
    def __init__(self, device: str = "auto", quiet: bool = False):
        self.device, self.quiet = device, quiet
        self._spaces: dict[str, Any] = {}
        self._index: dict[str, dict] = {}

    def get(self, name: str):
        if name not in self._spaces:
            from ppt.spaces import load_space

            try:
                self._spaces[name] = load_space(name, device=self.device, quiet=self.quiet)
            except ValueError as e:
                raise PptError(str(e), ExitCode.CONFIG, hint="see `ppt precompute --help` for space names") from None
        return self._spaces[name]

    def add(self, space) -> None:
        self._spaces[space.name] = space

    def index(self, space) -> dict:
        from ppt.attacks.knn import vocab_index

        if space.name not in self._index:
            self._index[space.name] = vocab_index(space)
        return self._index[space.name]


class TokenAligner:
    """Alignment of one record's perturbed tokens to originals, in the attack's space."""

    def __init__(
        self,
        spaces: SpaceCache,
        space: str | None,
        original_field: str | None,
        alignment_field: str = "ppt_alignment",
        stopwords: str = "auto",
    ):
        if stopwords not in STOPWORD_MODES:
            raise PptError(f"--stopwords must be one of {', '.join(STOPWORD_MODES)}", ExitCode.USAGE)
        self.spaces, self.space_name = spaces, space
        self.original_field, self.alignment_field, self.stopwords = original_field, alignment_field, stopwords
        self.sources: Counter[str] = Counter()
        self.unaligned = 0

    def prepare(self) -> None:
        """Load the attack's space (when one is given) before input is read."""
        if self.space_name:
            self.spaces.get(self.space_name)

    def __call__(self, rec: Record) -> tuple[Any, Any]:
        from ppt.attacks.realign import align_texts, parse_alignment_field
        from ppt.mechanisms.alignment import spans_by_rows

        data = rec.data
        mech_space_name = stamped_space(data)
        target_name = self.space_name or mech_space_name
        if target_name is None:
            raise RecordError("no_space", "the record has no ppt.sanitize stamp naming its space; pass --space")
        target = self.spaces.get(target_name)
        text = rec.text or ""
        if self.alignment_field in data and data[self.alignment_field] is not None:
            al = parse_alignment_field(data[self.alignment_field], text)
            source = self.spaces.get(mech_space_name) if mech_space_name else target
            if len(al) and (al.orig_rows.max() >= source.size or al.new_rows.max() >= source.size):
                raise RecordError("bad_alignment", f"alignment rows exceed the size of space {source.name}")
            if any(s is None for s in al.spans):
                found = spans_by_rows(source, text, al.new_rows)
                al.spans = [s if s is not None else f for s, f in zip(al.spans, found)]
            al.orig_words = al.words(source.vocab)
            if source.name != target.name:
                from ppt.attacks.knn import rows_in_space

                idx = self.spaces.index(target)
                new_words = [source.vocab[r] for r in al.new_rows.tolist()]
                al.orig_rows = rows_in_space(target, al.orig_words, idx)
                al.new_rows = rows_in_space(target, new_words, idx)
        else:
            if not self.original_field:
                raise RecordError("missing_original", "no alignment field and no --original-field to align against")
            orig = data.get(self.original_field)
            if not isinstance(orig, str):
                raise RecordError(
                    "missing_original", f"original field {self.original_field!r} is missing or not a string"
                )
            skip = self.stopwords == "exclude" or (self.stopwords == "auto" and stamped_keeps_stopwords(data))
            al = align_texts(target, orig, text, skip_stopwords=skip)
        self.sources[al.source] += 1
        self.unaligned += al.n_unaligned
        return al, target


class AttackRunner(Stage):
    """The per-record loop every attack shares: read the record's inputs (``inputs``, which may raise
    RecordError for that record alone), score them (``score``: one record's result and its stamp block,
    adding to the runner's tallies), merge the result under ``result_field`` with a ``ppt.attack_<name>``
    stamp. An attack is its ``inputs`` and ``score``; ``score_batch`` scores a batch at once where the
    attack is batched (the LLM attack). The sweep (:mod:`ppt.experiments.sweep`) calls the same ``score``."""

    name: str = ""

    def __init__(self, result_field: str = "attack"):
        self.result_field = result_field
        self.n_records = 0

    def inputs(self, rec: Record) -> Any:
        raise NotImplementedError

    def score(self, inputs: Any) -> tuple[dict, dict]:
        raise NotImplementedError

    def score_batch(self, inputs: list[Any]) -> list[tuple[dict, dict] | RecordError]:
        return [self.score(x) for x in inputs]

    def __call__(self, batch: list[Record]) -> list[dict | RecordError]:
        out: list[dict | RecordError | None] = [None] * len(batch)
        ok, ins = [], []
        for i, rec in enumerate(batch):
            try:
                ins.append(self.inputs(rec))
                ok.append(i)
            except RecordError as e:
                out[i] = e
        for i, scored in zip(ok, self.score_batch(ins) if ins else []):
            if isinstance(scored, RecordError):
                out[i] = scored
                continue
            result, block = scored
            self.n_records += 1
            out[i] = merge_result(batch[i].data, self.result_field, self.name, result, block)
        return out  # type: ignore[return-value]


class KnnRunner(AttackRunner):
    name = "knn"

    def __init__(self, aligner: TokenAligner | None, ks: tuple[int, ...] = (1, 10), result_field: str = "attack"):
        super().__init__(result_field)
        self.aligner, self.ks = aligner, tuple(sorted(set(ks)))
        self.attacks: dict[str, Any] = {}
        self.tallies = {k: Tally() for k in self.ks}
        self.unmapped = 0
        self.space_names: set[str] = set()

    def prepare(self) -> None:
        self.aligner.prepare()

    def signature(self) -> dict[str, Any]:
        return {"stage": f"attack_{self.name}", "space": self.aligner.space_name, "k": list(self.ks)}

    def _attack(self, space):
        from ppt.attacks.knn import KnnAttack

        if space.name not in self.attacks:
            self.attacks[space.name] = KnnAttack(space, self.ks)
        return self.attacks[space.name]

    def inputs(self, rec: Record) -> tuple:
        return self.aligner(rec)  # (alignment, space)

    def score(self, inputs: tuple) -> tuple[dict, dict]:
        al, space = inputs
        valid = al.new_rows >= 0
        self.unmapped += int((~valid).sum())
        hits = self._attack(space).hits(al.orig_rows[valid], al.new_rows[valid])
        n = int(valid.sum())
        result: dict[str, Any] = {}
        for j, k in enumerate(self.ks):
            s = int(hits[:, j].sum())
            self.tallies[k].add(s, n)
            result[f"top{k}"] = record_block(s, n)
        result.update(alignment=al.source, unaligned=al.n_unaligned)
        self.space_names.add(space.name)
        return result, {"space": space.stamp(), "k": list(self.ks), "alignment": al.source}

    def summary(self) -> dict:
        return {
            "attack": self.name,
            "n_records": self.n_records,
            "space": sorted(self.space_names),
            **{f"top{k}": t.block() for k, t in self.tallies.items()},
            "alignment": dict(self.aligner.sources),
            "unaligned": self.aligner.unaligned,
            "unmapped": self.unmapped,
        }


class MtiRunner(AttackRunner):
    name = "mti"

    def __init__(self, aligner: TokenAligner | None, attack, model_name: str, result_field: str = "attack"):
        super().__init__(result_field)
        self.aligner, self.attack, self.model_name = aligner, attack, model_name
        self.tally = Tally()
        self.unaligned_mlm = 0

    def prepare(self) -> None:
        self.aligner.prepare()

    def signature(self) -> dict[str, Any]:
        return {
            "stage": f"attack_{self.name}",
            "space": self.aligner.space_name,
            "model": self.model_name,
            "mask_length": self.attack.mask_length,
        }

    def inputs(self, rec: Record) -> tuple:
        al, _space = self.aligner(rec)
        return al, rec.text or ""

    def score(self, inputs: tuple) -> tuple[dict, dict]:
        al, text = inputs
        words = al.orig_words if al.orig_words is not None else [""] * len(al)
        res = self.attack.predict(text, al.spans, words)
        scored = [r for r in res if r is not None]
        s, n = sum(1 for ok, _ in scored if ok), len(scored)
        self.unaligned_mlm += len(res) - n
        self.tally.add(s, n)
        result = {**record_block(s, n), "alignment": al.source, "unaligned": al.n_unaligned + len(res) - n}
        return result, {"model": self.model_name, "mask_length": self.attack.mask_length, "alignment": al.source}

    def summary(self) -> dict:
        return {
            "attack": self.name,
            "model": self.model_name,
            "mask_length": self.attack.mask_length,
            "n_records": self.n_records,
            **self.tally.block(),
            "alignment": dict(self.aligner.sources),
            "unaligned": self.aligner.unaligned + self.unaligned_mlm,
            "forward_passes": self.attack.forward_passes,
        }


def original_text(rec: Record, field: str) -> str:
    """The record's original text in ``field`` (RecordError when it is missing or not a string)."""
    v = rec.data.get(field)
    if not isinstance(v, str):
        raise RecordError("missing_original", f"original field {field!r} is missing or not a string")
    return v


class LlmRunner(AttackRunner):
    name = "llm"

    def __init__(self, attack, original_field: str, result_field: str = "attack"):
        super().__init__(result_field)
        self.attack, self.original_field = attack, original_field
        self.tally = Tally()
        self.rouge: list[float] = []
        self.rouge_perturbed: list[float] = []

    def signature(self) -> dict[str, Any]:
        return {"stage": f"attack_{self.name}", "model": self.attack.lm.name, "prompt": self.attack.prompt}

    def inputs(self, rec: Record) -> tuple[str, str]:
        return rec.text or "", original_text(rec, self.original_field)

    def score_batch(self, inputs: list[tuple[str, str]]) -> list[tuple[dict, dict] | RecordError]:
        res = self.attack.run([t for t, _ in inputs], [o for _, o in inputs])
        block = {"model": self.attack.lm.name, "prompt": self.attack.prompt}
        out: list[tuple[dict, dict] | RecordError] = []
        for r in res:
            if isinstance(r, RecordError):
                out.append(r)
                continue
            self.tally.add(r["recovered"], r["hidden"])
            self.rouge.append(r["rouge_l"])
            self.rouge_perturbed.append(r["rouge_l_perturbed"])
            out.append((r, block))
        return out

    def summary(self) -> dict:
        mean = lambda xs: sum(xs) / len(xs) if xs else None
        return {
            "attack": self.name,
            "model": self.attack.lm.name,
            "n_records": self.n_records,
            **self.tally.block(),
            "rouge_l": mean(self.rouge),
            "rouge_l_perturbed": mean(self.rouge_perturbed),
        }


class NgramRunner(AttackRunner):
    name = "ngram"

    def __init__(self, original_field: str | None, ns: tuple[int, ...] = (1, 2, 3), result_field: str = "attack"):
        super().__init__(result_field)
        self.original_field, self.ns = original_field, tuple(sorted(set(ns)))
        self.tallies = {n: Tally() for n in self.ns}

    def signature(self) -> dict[str, Any]:
        return {"stage": f"attack_{self.name}", "n": list(self.ns)}

    def inputs(self, rec: Record) -> tuple[str, str]:
        return original_text(rec, self.original_field), rec.text or ""

    def score(self, inputs: tuple[str, str]) -> tuple[dict, dict]:
        from ppt.attacks.ngram import ngram_leakage

        orig, text = inputs
        result = {}
        for n, (s, t) in ngram_leakage(orig, text, self.ns).items():
            self.tallies[n].add(s, t)
            result[f"{n}gram"] = record_block(s, t)
        return result, {"n": list(self.ns)}

    def summary(self) -> dict:
        blocks = {}
        for n, t in self.tallies.items():
            b = t.block()
            b["leakage_rate"] = b.pop("success_rate")
            blocks[f"{n}gram"] = b
        return {"attack": self.name, "n_records": self.n_records, **blocks}


def summary_record(runner) -> dict:
    from ppt import __version__

    return {"summary": {"stage": "attack", **runner.summary(), "version": __version__}}


__all__ = [
    "AttackRunner",
    "KnnRunner",
    "LlmRunner",
    "MtiRunner",
    "NgramRunner",
    "SpaceCache",
    "TokenAligner",
    "merge_result",
    "stamped_space",
    "summary_record",
]

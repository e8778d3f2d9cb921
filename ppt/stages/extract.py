"""InferDPT's extraction module (paper section IV-D): a local causal LM reads the raw document and the
remote model's perturbed generation and writes a continuation aligned with the raw document.

The raw document never leaves the machine: this runs on a local model only. The prompt is the paper's
(``ppt.lm.templates.EXTRACT_TEMPLATE``, overridable), filled from the raw-document field and the
perturbed-generation field, wrapped in the model's chat template when it has one, and generated in
left-padded batches (``ppt.lm.generate``).

    ex = Extractor(LocalGenerator.load("smollm2"), raw_field="raw", generation_field="generation")
    out = ex(records)                # one dict (record + "extracted" + ppt.extract stamp) or RecordError each
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ppt.io import ExitCode, PptError, Record, RecordError, stamp, stamp_block
from ppt.io.stream import UNPROCESSED
from ppt.lm.base import Completion, SamplingParams
from ppt.lm.generate import LocalGenerator
from ppt.lm.templates import EXTRACT_TEMPLATE, Template, load_template
from ppt.stages.base import Stage


class Extractor(Stage):
    name = "extract"

    def __init__(
        self,
        generator: LocalGenerator,
        *,
        raw_field: str = "raw",
        generation_field: str = "generation",
        output_field: str = "extracted",
        template: Template | str | None = None,
        params: SamplingParams | None = None,
        seed: int | None = None,
        chat: bool = True,
        journal: Any = None,
        id_field: str = "id",
    ) -> None:
        self.generator = generator
        self.raw_field, self.generation_field, self.output_field = raw_field, generation_field, output_field
        if isinstance(template, Template):
            self.template = template
        else:
            self.template = load_template(
                template, EXTRACT_TEMPLATE, "paper-extraction", {"raw": raw_field, "generation": generation_field}
            )
        self.params = params or SamplingParams()
        self.seed, self.chat = seed, chat
        self.journal, self.id_field = journal, id_field  # --resume: ppt.remote.journal.Journal
        self.resumed = 0
        self.stop_error: PptError | None = None  # the journal failed: what is in hand is written, exit 74
        from ppt.rng import seeded

        self._block = {
            **generator.describe(),
            "template": self.template.describe(),
            "raw_field": raw_field,
            "generation_field": generation_field,
            "chat": bool(chat and generator.has_chat_template),
            "params": self.params.to_dict(),
            "seeded": seeded(seed),
        }

    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        return self.process(records)

    def signature(self) -> dict[str, Any]:
        return {"stage": self.name, **self._block, "output_field": self.output_field}

    def prompt(self, data: dict) -> Any:
        text = self.template.render(data)
        return [{"role": "user", "content": text}] if self.chat else text

    def process(self, records: list[Record]) -> list[dict | RecordError]:
        from ppt.rng import record_torch_generator

        results: list[Any] = [None] * len(records)
        todo: list[tuple[int, Record, Any]] = []
        for i, rec in enumerate(records):
            if self.output_field in rec.data:
                results[i] = RecordError(
                    "field_conflict", f"field '{self.output_field}' already exists; choose another --output-field"
                )
                continue
            try:
                prompt = self.prompt(rec.data)
                if self.journal is not None:
                    saved = self._journaled(rec, prompt)
                    if saved is not None:  # extracted by an earlier run from the same prompt and settings
                        results[i] = saved
                        self.resumed += 1
                        continue
                todo.append((i, rec, prompt))
            except RecordError as e:
                if e.type == "missing_field" and self.raw_field in e.message:
                    e = RecordError(
                        e.type, e.message + f" (keep the raw text with `ppt sanitize --keep-original {self.raw_field}`)"
                    )
                results[i] = e
        if todo:
            gens = [record_torch_generator(self.seed, rec.id, "extract") for _, rec, _ in todo]
            outs = self.generator.generate([p for _, _, p in todo], self.params, gens)
            for (i, rec, prompt), res in zip(todo, outs):
                if self.stop_error is not None:  # the journal failed: nothing more is this run's output
                    results[i] = UNPROCESSED
                    continue
                results[i] = res if isinstance(res, RecordError) else self._output(rec, res, prompt)
        return results

    def _digest(self, prompt: Any) -> str:
        """sha256 of the prompt and every setting that shapes the output: what --resume compares."""
        blob = orjson.dumps({"prompt": prompt, "stage": self._block}, option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(blob).hexdigest()

    def _key(self, rec: Record) -> bytes:
        from ppt.remote.journal import record_key

        return record_key(rec.data, self.id_field, rec.line_no)

    def _journaled(self, rec: Record, prompt: Any) -> dict | None:
        key = self._key(rec)
        if key not in self.journal:
            return None
        saved = self.journal.get(key)
        same = (stamp_block(saved, "extract") or {}).get("prompt_sha256") == self._digest(prompt)
        return saved if same else None  # another prompt (input, template, model or settings changed): redo

    def _output(self, rec: Record, res: Completion, prompt: Any = None) -> dict:
        data = dict(rec.data)
        data[self.output_field] = res.text.strip()
        block = {**self._block, "usage": res.usage, "finish_reason": res.finish_reason}
        if self.journal is not None:
            block["prompt_sha256"] = self._digest(prompt)
        out = stamp(data, "extract", block)
        if self.journal is not None:
            try:
                self.journal.append(self._key(rec), out, replace=True)
            except OSError as e:  # this one is written; the run stops after its batch (exit 74)
                why = e.strerror or type(e).__name__
                self.stop_error = PptError(
                    f"could not write the --resume journal ({why}): stopped; the extractions done are in the output",
                    ExitCode.IOERR,
                    hint="free space or choose another --resume file, then rerun with --resume",
                )
        return out

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

from typing import Any

from ppt.io import Record, RecordError, stamp
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
                todo.append((i, rec, self.prompt(rec.data)))
            except RecordError as e:
                if e.type == "missing_field" and self.raw_field in e.message:
                    e = RecordError(
                        e.type, e.message + f" (keep the raw text with `ppt sanitize --keep-original {self.raw_field}`)"
                    )
                results[i] = e
        if todo:
            gens = [record_torch_generator(self.seed, rec.id, "extract") for _, rec, _ in todo]
            outs = self.generator.generate([p for _, _, p in todo], self.params, gens)
            for (i, rec, _), res in zip(todo, outs):
                results[i] = res if isinstance(res, RecordError) else self._output(rec, res)
        return results

    def _output(self, rec: Record, res: Completion) -> dict:
        data = dict(rec.data)
        data[self.output_field] = res.text.strip()
        block = {**self._block, "usage": res.usage, "finish_reason": res.finish_reason}
        return stamp(data, "extract", block)

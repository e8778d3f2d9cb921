"""Named entities as sensitive spans: spaCy's NER on the offline ``en_core_web_sm`` (``pip install
'ppt-private-prompts[readable]'`` and ``ppt models install en_core_web_sm``; exit 78 with those commands when
missing)."""

from __future__ import annotations

from collections.abc import Sequence

from ppt.detect.base import Span

# entity labels that name, place or date a person (OntoNotes labels); organisations, amounts, counts and
# percentages are the content of most prompts (news, reports) and are not marked unless asked for
NER_LABELS = ("PERSON", "NORP", "FAC", "GPE", "LOC", "DATE", "TIME")
ALL_LABELS = (*NER_LABELS, "ORG", "MONEY", "CARDINAL", "PERCENT")


class NerDetector:
    def __init__(self, model: str = "en_core_web_sm", labels: Sequence[str] = NER_LABELS, batch_size: int = 64):
        from ppt.models.spacy import load_spacy

        self.nlp = load_spacy(model, exclude=("parser", "lemmatizer"), needed_for="the ner detector needs spaCy")
        self.labels = frozenset(labels)
        self.batch_size = batch_size
        self.signature = f"ner:{model}@{self.nlp.meta.get('version', '?')}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        docs = self.nlp.pipe(list(texts), batch_size=self.batch_size)
        return [[Span(e.start_char, e.end_char, e.label_) for e in doc.ents if e.label_ in self.labels] for doc in docs]

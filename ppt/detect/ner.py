"""Named entities as sensitive spans: spaCy's NER on an offline pipeline, ``en_core_web_md`` by default (``pip install
'ppt-private-prompts[readable]'`` and ``ppt models install``; exit 78 with those commands when missing).

The medium pipeline finds more of the names of people from many cultures than ``en_core_web_sm`` (``model=`` picks
either, or a pipeline's path), at about 1.4x the time per sentence. Organisations are marked (kind ``ORG``): they
identify people (an employer, a school, a clinic), and spaCy labels many non-English names and places ORG
("Väinö Otila", "Cyprus"). ``drop_labels=("ORG",)`` (or ``labels=``) keeps them; ``--allow`` keeps single ones.
Kinds are spaCy's (OntoNotes) labels."""

from __future__ import annotations

from collections.abc import Sequence

from ppt.detect.base import Span
from ppt.models.catalog import NER_MODEL

# entity labels that name, place, employ or date a person (OntoNotes labels); amounts, counts and percentages are
# the content of most prompts (news, reports) and are not marked unless asked for
NER_LABELS = ("PERSON", "NORP", "FAC", "GPE", "LOC", "ORG", "DATE", "TIME")
ALL_LABELS = (*NER_LABELS, "MONEY", "CARDINAL", "PERCENT")
# components loaded but not run (parser and lemmatizer are not loaded): they set nothing the NER reads
UNREAD = ("tok2vec", "tagger", "attribute_ruler", "senter", "morphologizer")


class NerDetector:
    """``labels``: the spaCy entity labels marked (default :data:`NER_LABELS`); ``drop_labels``: labels taken out
    of those (``("ORG",)`` keeps organisations). Either names labels of the model's NER (PptError, exit 2,
    listing them, otherwise). The signature names the model, its version and the labels marked."""

    def __init__(
        self,
        model: str = NER_MODEL,
        labels: Sequence[str] = NER_LABELS,
        batch_size: int = 64,
        drop_labels: Sequence[str] = (),
    ):
        from ppt.models.spacy import load_spacy

        self.nlp = load_spacy(
            model, exclude=("parser", "lemmatizer"), needed_for="the ner detector needs spaCy", extra="readable"
        )
        if isinstance(labels, str) or isinstance(drop_labels, str):
            raise TypeError("labels and drop_labels are sequences of label names, not one string")
        known = set(self.nlp.get_pipe("ner").labels) if "ner" in self.nlp.pipe_names else set()
        unknown = [x for x in (*labels, *drop_labels) if x not in known]
        if unknown:
            from ppt.io import ExitCode, PptError

            raise PptError(
                f"the ner detector's model {model} has no entity label {', '.join(map(repr, unknown))}",
                ExitCode.USAGE,
                hint="its labels: " + ", ".join(sorted(known)),
            )
        # the NER reads only lexical attributes (norm, prefix, suffix, shape, vectors) and its own tok2vec in
        # spaCy's English pipelines: tags, POS and morphology are work nobody reads (same entities, ~1.4x faster)
        ner_reads = {n for n, pipe in self.nlp.pipeline if "ner" in getattr(pipe, "listening_components", ())}
        for name in self.nlp.pipe_names:
            if name in UNREAD and name not in ner_reads:
                self.nlp.disable_pipe(name)
        self.labels = frozenset(labels) - frozenset(drop_labels)
        self.batch_size = batch_size
        self.signature = f"ner:{model}@{self.nlp.meta.get('version', '?')}:{','.join(sorted(self.labels))}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        docs = self.nlp.pipe(list(texts), batch_size=self.batch_size)
        return [[Span(e.start_char, e.end_char, e.label_) for e in doc.ents if e.label_ in self.labels] for doc in docs]

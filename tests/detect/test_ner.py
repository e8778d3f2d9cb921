"""Issue 35: the ner detector: organisations marked by default (kind ORG) and a way to keep them (``labels``,
``drop_labels``); the model's name, version and labels in the signature; en_core_web_md by default; spaCy loaded
without transformers and torch (presidio-analyzer's spaCy factory entry point imported them on every load).

The label logic runs on a stand-in pipeline; what needs the real model skips when it is not installed
(``ppt models install``)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from ppt.detect.ner import ALL_LABELS, NER_LABELS, NerDetector
from ppt.io import ExitCode, PptError
from ppt.models.catalog import NER_MODEL
from tests.helpers import installed


class FakeNlp:
    """A spaCy pipeline's surface the detector uses: every capitalised word of a text is an entity, labelled
    by the given words (others PERSON)."""

    meta = {"version": "9.9.9"}

    def __init__(self, labels: dict[str, str], listeners: tuple[str, ...] = ()) -> None:
        self.by_word = labels
        self.loaded: list[tuple] = []
        self.pipeline = [
            ("tok2vec", SimpleNamespace(listening_components=listeners)),
            ("tagger", SimpleNamespace()),
            ("attribute_ruler", SimpleNamespace()),
            ("ner", SimpleNamespace()),
        ]
        self.disabled: list[str] = []

    @property
    def pipe_names(self):
        return [n for n, _ in self.pipeline if n not in self.disabled]

    def disable_pipe(self, name):
        self.disabled.append(name)

    def get_pipe(self, name):
        assert name == "ner"
        return SimpleNamespace(labels=("CARDINAL", *ALL_LABELS))

    def pipe(self, texts, batch_size=64):
        import re

        for t in texts:
            ents = [
                SimpleNamespace(start_char=m.start(), end_char=m.end(), label_=self.by_word.get(m.group(), "PERSON"))
                for m in re.finditer(r"\b[A-Z]\w+", t)
            ]
            yield SimpleNamespace(ents=ents)


@pytest.fixture
def fake(monkeypatch):
    nlp = FakeNlp({"Acme": "ORG", "Oslo": "GPE", "Friday": "DATE", "Seven": "CARDINAL"})

    def load(name, exclude=(), needed_for="", extra=""):
        nlp.loaded.append((name, exclude, extra))
        return nlp

    monkeypatch.setattr("ppt.models.spacy.load_spacy", load)
    return nlp


def kinds(det, text):
    [spans] = det.detect([text])
    return [(text[s.start : s.end], s.kind) for s in spans]


TEXT = "Anna from Acme flies to Oslo on Friday. Seven seats."


def test_organisations_are_marked_by_default_with_their_spacy_label(fake):
    assert "ORG" in NER_LABELS and "CARDINAL" not in NER_LABELS
    det = NerDetector()
    assert kinds(det, TEXT) == [("Anna", "PERSON"), ("Acme", "ORG"), ("Oslo", "GPE"), ("Friday", "DATE")]
    # the medium model by default, loaded for the readable extra without the parser and lemmatizer
    assert fake.loaded == [(NER_MODEL, ("parser", "lemmatizer"), "readable")] and NER_MODEL == "en_core_web_md"


def test_only_the_ner_and_what_it_listens_to_run(fake):
    NerDetector()
    assert fake.disabled == ["tok2vec", "tagger", "attribute_ruler"]
    fake.disabled.clear()
    fake.pipeline[0][1].listening_components = ("tagger", "ner")  # a pipeline whose NER shares the tok2vec
    NerDetector()
    assert fake.disabled == ["tagger", "attribute_ruler"]


def test_drop_labels_keeps_organisations(fake):
    det = NerDetector(drop_labels=("ORG",))
    assert kinds(det, TEXT) == [("Anna", "PERSON"), ("Oslo", "GPE"), ("Friday", "DATE")]
    assert NerDetector(labels=[x for x in NER_LABELS if x != "ORG"]).labels == det.labels


def test_labels_picks_the_labels_marked(fake):
    assert kinds(NerDetector(labels=("PERSON", "CARDINAL")), TEXT) == [("Anna", "PERSON"), ("Seven", "CARDINAL")]


def test_the_signature_names_the_model_its_version_and_the_labels(fake):
    assert NerDetector().signature == "ner:en_core_web_md@9.9.9:DATE,FAC,GPE,LOC,NORP,ORG,PERSON,TIME"
    assert NerDetector("en_core_web_sm", drop_labels=["ORG"]).signature == (
        "ner:en_core_web_sm@9.9.9:DATE,FAC,GPE,LOC,NORP,PERSON,TIME"
    )


def test_a_label_the_model_lacks_is_a_usage_error_listing_its_labels(fake):
    with pytest.raises(PptError) as e:
        NerDetector(labels=("PERSON", "ORGANIZATION"))
    assert e.value.exit_code == ExitCode.USAGE and "'ORGANIZATION'" in str(e.value) and "ORG" in e.value.hint
    with pytest.raises(PptError):
        NerDetector(drop_labels=("ORGS",))
    with pytest.raises(TypeError):
        NerDetector(drop_labels="ORG")


def test_requirements_name_the_default_model():
    from ppt.detect import requirements

    assert requirements._models("ner") == [NER_MODEL]


# --------------------------------------------------------------------------------------------------- real model


def _ready(alias: str) -> bool:
    import importlib.util

    return importlib.util.find_spec("spacy") is not None and installed(alias)


needs_model = pytest.mark.skipif(
    not _ready(NER_MODEL), reason=f"spaCy or {NER_MODEL} not installed (ppt models install {NER_MODEL})"
)


@needs_model
def test_names_from_many_cultures_and_organisations_are_hidden():
    det = NerDetector()
    assert det.signature.startswith(f"ner:{NER_MODEL}@3.8.0:")
    for text, secret in [
        ("Väinö Otila called from Cyprus.", ["Väinö Otila", "Cyprus"]),
        ("My colleague Tereza Čerkez lives in Helsinki.", ["Tereza Čerkez", "Helsinki"]),
        ("Please book a table for Nomvula Dlamini and Kwame Mensah at 7pm.", ["Nomvula Dlamini", "Kwame Mensah"]),
    ]:
        [spans] = det.detect([text])
        for value in secret:
            i = text.index(value)
            assert any(s.start <= i and i + len(value) <= s.end for s in spans), (text, value, spans)
    assert ("Microsoft", "ORG") in kinds(det, "I work at Microsoft as a nurse.")
    assert ("Microsoft", "ORG") not in kinds(NerDetector(drop_labels=("ORG",)), "I work at Microsoft as a nurse.")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)


@needs_model
def test_the_ner_detector_leaves_transformers_and_torch_out():
    """presidio-analyzer registers a spaCy factory entry point: spacy.load imported presidio, and with it
    transformers and torch (seconds of a one-record run)."""
    r = _run(
        "import sys\n"
        "from ppt.detect.ner import NerDetector\n"
        "NerDetector().detect(['Anna lives in Oslo'])\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
        "import torch\n"  # they import normally afterwards
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "[]"

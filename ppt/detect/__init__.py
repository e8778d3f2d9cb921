"""Detectors of sensitive spans, for ``ppt sanitize --protect detected``: the mechanism replaces only what a
detector marks, and everything else passes through verbatim (stated as unprotected in the stamp).

    from ppt.detect import build_detector
    det = build_detector(["patterns"], deny="deny.txt", allow="allow.txt")
    det.detect(["Mail alice@example.com"])  # [[Span(5, 22, "EMAIL_ADDRESS")]]

``lists`` (the user's deny- and allow-lists), ``patterns`` (presidio-analyzer's pattern recognizers and ppt's own:
e-mails, phones, cards, IBANs, IDs, licences, usernames, dates, ages; ``pip install
'ppt-private-prompts[readable]'``), ``addresses`` (postal addresses of many countries, one span each), ``ner``
(spaCy's named entities on the offline en_core_web_md), ``names`` (a gazetteer of names of 86 locales, honorifics,
the contexts people name people in), ``categories`` (sensitive words that are not entities: health, sexual
orientation, religion, political opinion, ethnicity, finances, immigration, criminal record; lexicons generated
from WordNet and rules, shipped).
A value detected once is marked at its other occurrences in the record too (a first name alone after the full
name: :func:`ppt.detect.base.propagate`). Detection itself depends on the text: what a detector misses is
released raw.
"""

from __future__ import annotations

from ppt.detect.base import Detector, Span, merge_spans
from ppt.detect.build import DETECTORS, build_detector

__all__ = ["DETECTORS", "Detector", "Span", "build_detector", "merge_spans"]

#!/usr/bin/env python
"""Presidio out of the box as a sanitizer, the yardstick of bench/pii.py: JSONL records in (a file or stdin),
the same records out, each text with every analyzer result replaced by ``<ENTITY_TYPE>`` (the anonymizer's
default operator). Nothing is configured but the NLP engine, which loads the spaCy model given by ``--model``
(bench/pii.py passes the pipeline ppt's ner detector loads, so both sides run the same model), and, as in ppt's
patterns detector and any offline deployment, the e-mail check's public-suffix list, read from tldextract's bundled
snapshot instead of fetched from the network (offline, the fetch fails after its timeouts).

    python bench/presidio_baseline.py [--model en_core_web_sm|PATH] [--batch-size 0] [FILE] > out.jsonl

--batch-size 0 (default) calls ``AnalyzerEngine.analyze`` once per record, the documented call; N > 0 runs
``BatchAnalyzerEngine.analyze_iterator`` with spaCy batches of N.
"""

from __future__ import annotations

import argparse
import json
import sys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", nargs="?", default="-", help="JSONL file (default: stdin)")
    ap.add_argument("--model", default="en_core_web_sm", help="spaCy model name or path")
    ap.add_argument("--field", default="text")
    ap.add_argument("--batch-size", type=int, default=0)
    args = ap.parse_args()

    import tldextract
    from presidio_analyzer import AnalyzerEngine, BatchAnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider
    from presidio_anonymizer import AnonymizerEngine

    tldextract.extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)  # the bundled snapshot

    conf = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": args.model}]}
    analyzer = AnalyzerEngine(nlp_engine=NlpEngineProvider(nlp_configuration=conf).create_engine())
    anonymizer = AnonymizerEngine()

    src = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    recs = [json.loads(line) for line in src if line.strip()]
    texts = [str(r.get(args.field) or "") for r in recs]
    if args.batch_size > 0:
        results = BatchAnalyzerEngine(analyzer).analyze_iterator(texts, "en", batch_size=args.batch_size)
    else:
        results = (analyzer.analyze(t, language="en") for t in texts)
    out = sys.stdout
    for rec, text, found in zip(recs, texts, results):
        rec[args.field] = anonymizer.anonymize(text, found).text
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()

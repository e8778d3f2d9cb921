"""Pattern-shaped PII as sensitive spans: presidio-analyzer's predefined pattern recognizers (e-mails, phones,
credit cards, IBANs, IP and MAC addresses, URLs, crypto wallets, US SSNs, dates), run without its NLP engine.

Optional (``pip install 'ppt[detect]'``; exit 78 with that command when missing). Offline: presidio's e-mail
check reads the public-suffix list through tldextract, which would fetch it from the network; here it reads
tldextract's bundled snapshot only.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

from ppt.detect.base import Span

RECOGNIZERS = (
    "EmailRecognizer",
    "PhoneRecognizer",
    "CreditCardRecognizer",
    "IbanRecognizer",
    "IpRecognizer",
    "MacAddressRecognizer",
    "UrlRecognizer",
    "CryptoRecognizer",
    "UsSsnRecognizer",
    "DateRecognizer",
)
MIN_SCORE = 0.3


OPTIONAL = ("transformers", "torch")  # presidio's model-based recognizers import these only if present


@contextlib.contextmanager
def _without_transformers_engine():
    """Import presidio without its model-based NER recognizers' libraries, which the pattern recognizers never
    use: presidio imports ``transformers.pipeline`` and torch only inside ``try/except ImportError`` (they are
    optional there), and that took 5 of the 6 seconds of a one-record run. While presidio is imported, and only
    when neither is loaded yet, both read as not installed (``sys.modules[name] = None``); they import normally
    afterwards."""
    blocked = [name for name in OPTIONAL if name not in sys.modules]
    if "presidio_analyzer" in sys.modules or len(blocked) < len(OPTIONAL):
        yield
        return
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


class PatternDetector:
    def __init__(self, recognizers: Sequence[str] = RECOGNIZERS, min_score: float = MIN_SCORE):
        from ppt.io import ExitCode, PptError

        try:
            with _without_transformers_engine():
                import presidio_analyzer
                from presidio_analyzer import predefined_recognizers as pr
            import tldextract
        except ImportError:
            raise PptError(
                "the patterns detector needs presidio-analyzer, which is not installed",
                ExitCode.CONFIG,
                hint="pip install 'ppt[detect]'",
            ) from None
        import importlib
        from types import SimpleNamespace

        offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
        email = importlib.import_module(pr.EmailRecognizer.__module__)
        if hasattr(email, "tldextract"):
            email.tldextract = SimpleNamespace(extract=offline)  # this module's lookups only, never the network
        self.recognizers = [getattr(pr, name)() for name in recognizers]
        self.min_score = float(min_score)
        version = getattr(presidio_analyzer, "__version__", None)
        if version is None:
            from importlib.metadata import version as dist_version

            version = dist_version("presidio-analyzer")
        self.signature = f"patterns:presidio@{version}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        out = []
        for text in texts:
            spans = []
            for r in self.recognizers:
                for hit in r.analyze(text, r.supported_entities, None) or []:
                    if hit.score >= self.min_score:
                        spans.append(Span(hit.start, hit.end, hit.entity_type))
            out.append(spans)
        return out

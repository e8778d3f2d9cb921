"""Pattern-shaped PII as sensitive spans: presidio-analyzer's predefined pattern recognizers (e-mails, phones,
credit cards, IBANs, IP and MAC addresses, URLs, crypto wallets, US SSNs, dates), run without its NLP engine, and
a presidio ``PatternRecognizer`` for ages in their common forms (:data:`AGE_PATTERNS`).

Phones: presidio's recognizer checks candidates with the phonenumbers library; at its default leniency it drops
numbers that are not valid in a region ("+44 970 6355", "598.555.3105": made up, but still a person's number in
a prompt), so it runs at leniency 0 (phonenumbers' "possible"), keeping hits of :data:`PHONE_MIN_DIGITS` digits or
more (below that it takes years and counts: "2004", "35").

Optional (``pip install 'ppt-private-prompts[readable]'``; exit 78 with that command when missing). Offline:
presidio's e-mail check reads the public-suffix list through tldextract, which would fetch it from the network;
here it reads tldextract's bundled snapshot only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ppt.detect.base import Span, list_tag
from ppt.models._imports import without_transformers_engine as _without_transformers_engine

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
    "AgeRecognizer",
    # identity documents, licences and account numbers (presidio's predefined recognizers, weak patterns
    # lifted by their context words: :func:`_with_context`)
    "UsItinRecognizer",
    "UsLicenseRecognizer",
    "UsPassportRecognizer",
    "UsBankRecognizer",
    "AbaRoutingRecognizer",
    "UsMbiRecognizer",
    "UsNpiRecognizer",
    "MedicalLicenseRecognizer",
    "NhsRecognizer",
    "UkNinoRecognizer",
    "UkPassportRecognizer",
    "UkDrivingLicenceRecognizer",
    "CaSinRecognizer",
    "InAadhaarRecognizer",
    "InPanRecognizer",
    "InPassportRecognizer",
    "InVoterRecognizer",
    "SgFinRecognizer",
    "AuTfnRecognizer",
    "AuMedicareRecognizer",
    "EsNifRecognizer",
    "EsNieRecognizer",
    "ItFiscalCodeRecognizer",
    "PlPeselRecognizer",
    "FiPersonalIdentityCodeRecognizer",
    "SePersonnummerRecognizer",
    "DeTaxIdRecognizer",
    "DePassportRecognizer",
    "DeIdCardRecognizer",
    "KrRrnRecognizer",
    "TrNationalIdRecognizer",
    "IdRecognizer",
    "UsernameRecognizer",
    "SortCodeRecognizer",
    "DayMonthRecognizer",
    "YearRecognizer",
    "PostcodeRecognizer",
)
MIN_SCORE = 0.3
# presidio's context enhancement (LemmaContextAwareEnhancer's defaults): a hit with one of its recognizer's context
# words among the CONTEXT_WINDOW words before it gains CONTEXT_BOOST, to at least CONTEXT_FLOOR
CONTEXT_BOOST, CONTEXT_FLOOR, CONTEXT_WINDOW = 0.35, 0.4, 5
_CONTEXT_WORD = re.compile(r"[^\W_]+")
PHONE_MIN_DIGITS = 7
_AGE = r"(?:1[01]\d|[1-9]?\d)"  # 0-119
# (name, regex, score) of presidio Patterns (matched case-insensitively, presidio's default flags); the span is the
# number alone, so "years old" stays readable
AGE_PATTERNS = (
    ("age (N years old, N-year-old)", rf"\b{_AGE}(?=[- ](?:years?|yrs?)[- ]old\b|[- ]years? of age\b)", 0.6),
    ("age (aged N, age: N)", rf"(?:(?<=\baged )|(?<=\bage )|(?<=\bage: )|(?<=\bage:)){_AGE}\b(?![.,:/]\d)", 0.6),
    (
        "age (I am N, turned N)",
        rf"(?:(?<=\bI am )|(?<=\bI'm )|(?<=\bturned )|(?<=\bturns )|(?<=\bturning )|(?<=\bhe's )|(?<=\bshe's )|"
        rf"(?<=\bhe is )|(?<=\bshe is )|(?<=\bthey're )|(?<=\bwho's )|(?<=\bwho is )){_AGE}\b(?![.,:/%]?\d)"
        r"(?!\s*(?:%|percent|per\b|times\b|(?:minute|hour|day|week|month|year)s\b))",
        0.5,
    ),
    ("age (is N., was N.)", rf"(?:(?<=\bis )|(?<=\bwas )){_AGE}(?=[.;!?](?:\s|$)|[ \t]*$)", 0.4),
    ("age (N yo, N y/o, N yrs old)", rf"\b{_AGE}(?=[ -]?(?:yo|y/o|y\.o\.|yrs?(?: old)?|yr old)\b)", 0.6),
    ("age (at the age of N)", rf"(?<=\bage of ){_AGE}\b(?![.,:/]\d)", 0.6),
    (
        "age (in my late forties, mid-30s)",
        r"\b(?:early|mid|late)[- ]?(?:twenties|thirties|forties|fifties|sixties|seventies|eighties|nineties|"
        r"teens|[1-9]0s)\b",
        0.5,
    ),
    ("age (N months old)", r"\b\d{1,2}(?=[- ](?:months?|weeks?)[- ]old\b)", 0.5),
    ("age (Nth birthday)", r"\b(?:1[01]\d|[1-9]?\d)(?=(?:st|nd|rd|th)[ -]birthday\b)", 0.5),
    ("age (at N, I)", rf"(?<=\bat ){_AGE}(?=, (?:I|he|she|they|we)\b)", 0.4),
)


def _digits(s: str) -> int:
    return sum(c.isdigit() for c in s)


# a card number of any issuer range: Visa 4, Mastercard 51-55 and 2221-2720, Amex 34/37, Diners 36/38/30,
# Discover 6011/65, JCB 35, UnionPay 62, Maestro 50/56-69; 13-19 digits in groups (presidio's own pattern lacks
# the 2-series); presidio's recognizer keeps only those that pass the Luhn check
CARD_PATTERN = r"(?<![\d-])(?:4\d{3}|5[0-6]\d{2}|2[2-7]\d{2}|3[0-8]\d{2}|6\d{3})(?:[- ]?\d{3,6}){2,4}(?![\d-])"
# employee, patient, member, student, case and claim numbers: a number (letters allowed) right after its label
ID_PATTERN = (
    "id (label: number)",
    r"(?i:(?<=\b(?:id|no|number|#|mrn|nhi)[:.#]\s)|(?<=\b(?:id|no|number|mrn)\s)|(?<=#))"
    r"(?=[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9-]{3,}[A-Z0-9]\b",
    0.35,
)
ID_CONTEXT = (
    "employee",
    "staff",
    "patient",
    "mrn",
    "member",
    "membership",
    "student",
    "case",
    "claim",
    "policy",
    "account",
    "customer",
    "passport",
    "licence",
    "license",
    "badge",
    "record",
    "reference",
    "ref",
    "ticket",
    "booking",
    "order",
    "invoice",
    "application",
    "visa",
    "permit",
    "national",
    "insurance",
    "tax",
    "voter",
)


_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)(?:[a-z]{0,6})\.?"
# ppt's own presidio PatternRecognizers: name -> (entity, ((pattern name, regex, score), ...), context words).
# Regexes run on presidio's ``regex`` engine (variable-length look-behind) with its default flags (case-blind).
# Scores under MIN_SCORE count only with a context word before the hit (:func:`_with_context`).
EXTRA: dict[str, tuple[str, tuple[tuple[str, str, float], ...], tuple[str, ...]]] = {
    "IdRecognizer": (
        "ID",
        (
            ID_PATTERN,
            (
                "id (reference, booking, code: value)",
                r"(?<=\b(?:ref|reference|booking|confirmation|locator|pnr|code|case|claim|policy|ticket|order|"
                r"member|membership|account|acct|badge|permit|visa|application|licen[cs]e|passport)\.?"
                r"(?:\s(?:no|nr|number|id|code|ref))?\.?(?:\s(?:is|was))?\s?[:#=]?\s?)(?=[a-z0-9-]*\d)[a-z0-9]"
                r"[a-z0-9_-]{3,}[a-z0-9]\b",
                0.35,
            ),
            (
                "code (letters and digits)",
                r"(?-i:\b(?=(?:[A-Z0-9-]*\d){2})(?=(?:[A-Z0-9-]*[A-Z]){2})[A-Z0-9]{2,}(?:-[A-Z0-9]{2,})*\b)",
                0.1,
            ),
            ("secret (hex, 16+)", r"(?-i:\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b)", 0.4),
            ("secret (key-like)", r"\b(?:sk|pk|rk|api|key|token|ghp|gho|xox[abp])[-_][a-z0-9_-]{12,}\b", 0.6),
            ("user id (u_123456)", r"\b[a-z]{1,8}_\d{3,}\b", 0.3),
        ),
        ID_CONTEXT,
    ),
    "UsernameRecognizer": (
        "USERNAME",
        (
            (
                "username (label: value, config keys, 'logged in as')",
                r"(?<=\b(?:[\w.]*[_.-])?(?:username|user\s?name|user\s?id|userid|login|handle|gamertag|"
                r"screen\s?name|nick(?:name)?|owner|author)\s*(?:[:=]|\bis\b)\s*[\"']?"
                r"|\b(?:[\w.]*[_.-])?user\s*[:=]\s*[\"']?|\b(?:logged|signed)\s+in\s+as\s)"
                r"@?(?![\"'{\[])[a-z0-9][a-z0-9_.-]{1,30}[a-z0-9_]\b(?![@(])",
                0.5,
            ),
            (
                "username (label value, a digit or _ . inside)",
                r"(?<=\b(?:username|user\s?name|user|login|handle|account|gamertag)\s(?:is\s)?)"
                r"@?(?=[a-z0-9_.-]*(?:\d|[_.][a-z0-9]))[a-z0-9][a-z0-9_.-]{1,30}[a-z0-9_]\b",
                0.4,
            ),
            ("handle (@name)", r"(?<![\w@.])@[a-z0-9_]{2,30}\b(?![.@]\w)", 0.5),
            (
                "home directory (/home/NAME/)",
                r"(?<=(?:/home/|/Users/|\\Users\\))[a-z0-9][a-z0-9_.-]{1,30}(?=[/\\])",
                0.5,
            ),
        ),
        ("username", "user", "login", "handle", "account", "profile", "instagram", "twitter", "tiktok", "github"),
    ),
    "SortCodeRecognizer": (
        "BANK_ACCOUNT",
        (("uk sort code", r"\b\d{2}-\d{2}-\d{2}\b", 0.1),),
        ("sort", "bank", "account", "acct", "branch"),
    ),
    "DayMonthRecognizer": (
        "DATE_TIME",
        (
            (
                "date (9 Dec, 28th of February 2024)",
                rf"(?-i:\b(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?\s(?:of\s)?{_MONTH}(?:,?\s\d{{4}})?(?!\w))",
                0.5,
            ),
            (
                "date (Dec 9, February 28th, 2024)",
                rf"(?-i:\b{_MONTH}\s(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?(?:,?\s\d{{4}})?\b)",
                0.5,
            ),
        ),
        ("on", "date", "dob", "born", "due", "appointment", "since", "until", "from"),
    ),
    # a postcode after its label, in any country's format ("ZIP: 5282", "postcode 25-410")
    "PostcodeRecognizer": (
        "ZIP_CODE",
        (
            (
                "postcode (label: value)",
                r"(?<=\b(?:zip|zip\s?code|postcode|post\s?code|postal\s?code|plz|cep|pin\s?code|pincode)\s?(?:[:#=]|\bis\b)?\s?)"
                r"(?!is\b)(?=[a-z0-9 -]{0,9}\d)[a-z0-9]{1,8}(?:[ -][a-z0-9]{1,5})?\b",
                0.5,
            ),
        ),
        (),
    ),
    # a year after a preposition of time ("in 2016", "since 1999", "born 1984"): spaCy's md model labels bare
    # years CARDINAL, and a year of a life is a date of it
    "YearRecognizer": (
        "DATE_TIME",
        (
            (
                "year (in 2016, since 1999)",
                r"(?<=\b(?:in|since|from|until|till|by|born|year|circa|c\.|during|of|early|mid|late)\s)"
                r"(?:1[89]\d\d|20\d\d)\b(?![.,:/-]?\d)",
                0.4,
            ),
        ),
        (),
    ),
}


def _recognizer(pr, name: str):
    """A presidio recognizer by name: a predefined one, the phone one at leniency 0, or ppt's own (:data:`EXTRA`,
    the age recognizer)."""
    if name in EXTRA:
        from presidio_analyzer import Pattern, PatternRecognizer

        entity, patterns, context = EXTRA[name]
        return PatternRecognizer(
            supported_entity=entity, patterns=[Pattern(*p) for p in patterns], context=list(context), name=name
        )
    if name == "AgeRecognizer":
        from presidio_analyzer import Pattern, PatternRecognizer

        patterns = [Pattern(n, regex, score) for n, regex, score in AGE_PATTERNS]
        return PatternRecognizer(supported_entity="AGE", patterns=patterns, name=name)
    if name == "CreditCardRecognizer":  # every issuer range, 2-series Mastercard and UnionPay included (Luhn-checked)
        from presidio_analyzer import Pattern

        return pr.CreditCardRecognizer(patterns=[Pattern("card (all issuers)", CARD_PATTERN, 0.3)])
    if name == "PhoneRecognizer":
        return pr.PhoneRecognizer(leniency=0)
    return getattr(pr, name)()


class PatternDetector:
    def __init__(self, recognizers: Sequence[str] = RECOGNIZERS, min_score: float = MIN_SCORE):
        from ppt.dist import pip_install
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
                hint=pip_install("readable"),
            ) from None
        import importlib
        from types import SimpleNamespace

        offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
        email = importlib.import_module(pr.EmailRecognizer.__module__)
        if hasattr(email, "tldextract"):
            email.tldextract = SimpleNamespace(extract=offline)  # this module's lookups only, never the network
        self.recognizers = [_recognizer(pr, name) for name in recognizers]
        self.contexts = [frozenset(w.lower() for w in (getattr(r, "context", None) or ())) for r in self.recognizers]
        self.min_score = float(min_score)
        version = getattr(presidio_analyzer, "__version__", None)
        if version is None:
            from importlib.metadata import version as dist_version

            version = dist_version("presidio-analyzer")
        # which recognizers, with ppt's settings (the age patterns, the phones' leniency): 8 hex digits
        settings = [
            *recognizers,
            *map(repr, AGE_PATTERNS),
            repr(sorted(EXTRA.items())),
            CARD_PATTERN,
            f"phone:leniency=0,min-digits={PHONE_MIN_DIGITS}",
            f"context:{CONTEXT_BOOST},{CONTEXT_FLOOR},{CONTEXT_WINDOW}",
        ]
        self.signature = f"patterns:presidio@{version}#{list_tag(settings)}"

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        out = []
        for text in texts:
            spans = []
            for r, context in zip(self.recognizers, self.contexts):
                for hit in r.analyze(text, r.supported_entities, None) or []:
                    if hit.entity_type == "PHONE_NUMBER" and _digits(text[hit.start : hit.end]) < PHONE_MIN_DIGITS:
                        continue
                    if _with_context(hit.score, text, hit.start, context) >= self.min_score:
                        spans.append(Span(hit.start, hit.end, hit.entity_type))
            out.append(spans)
        return out


def _with_context(score: float, text: str, start: int, context: frozenset[str]) -> float:
    """A hit's score after presidio's context rule: one of the recognizer's context words (or its plural) among
    the :data:`CONTEXT_WINDOW` words before the hit lifts it by :data:`CONTEXT_BOOST` to at least
    :data:`CONTEXT_FLOOR` (presidio's analyzer does this with its NLP engine's lemmas; here without one)."""
    if score >= MIN_SCORE or not context:
        return score
    before = _CONTEXT_WORD.findall(text[max(0, start - 80) : start].lower())[-CONTEXT_WINDOW:]
    if any(w in context or w.rstrip("s") in context for w in before):
        return max(score + CONTEXT_BOOST, CONTEXT_FLOOR)
    return score

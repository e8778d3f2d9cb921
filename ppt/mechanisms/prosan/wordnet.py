"""WordNet path similarity between a word and its replacement candidates (ProSan's s_c).

Why its own module: the similarity is injectable (a callable ``similarity(word, candidates) -> [s_c]``)
so tests and machines without WordNet run; the default reads WordNet 3.0 from Debian's
``wordnet-base`` + ``wordnet-sense-index`` (``/usr/share/wordnet``) or an NLTK data directory, with
NLTK's maintained reader. NLTK wants the files *copied* under ``corpora/wordnet`` plus a ``lexnames``
file the Debian package does not ship, so :func:`nltk_wordnet_root` copies them once into the ppt cache
and writes that file (the 45 lexicographer files of WordNet 3.0, ``lexnames(5WN)``).

s_c = max path similarity over the two words' noun synsets (any part of speech when either has no noun
sense), in [0, 1]; 0 when WordNet knows neither word (most names). When WordNet is absent the
mechanism falls back to cosine similarity of masked-LM input embeddings clipped to [0, 1]
(``similarity="embedding"``), as documented in the mechanism.
"""

from __future__ import annotations

import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

WORDNET_INSTALL = (
    "apt-get install -y wordnet-base wordnet-sense-index && pip install 'ppt-private-prompts[prosan]' "
    "(or --param similarity=embedding)"
)
DEBIAN_DIR = Path("/usr/share/wordnet")
_NEEDED = (
    "index.noun",
    "data.noun",
    "index.verb",
    "data.verb",
    "index.adj",
    "data.adj",
    "index.adv",
    "data.adv",
    "noun.exc",
    "verb.exc",
    "adj.exc",
    "adv.exc",
    "index.sense",
)
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body noun.cognition "
    "noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive noun.object noun.person "
    "noun.phenomenon noun.plant noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
    "noun.substance noun.time verb.body verb.change verb.cognition verb.communication verb.competition "
    "verb.consumption verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession "
    "verb.social verb.stative verb.weather adj.ppl"
).split()
_LEX_CATEGORY = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}


def lexnames_text() -> str:
    """WordNet 3.0's ``lexnames`` file: number, name, syntactic category, tab-separated."""
    return "".join(f"{i:02d}\t{name}\t{_LEX_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))


def _has_files(d: Path) -> bool:
    return all((d / f).is_file() for f in _NEEDED[:8])


def find_wordnet_source() -> Path | None:
    """A directory with WordNet's dict files: ``$PPT_WORDNET``, an NLTK data dir, or Debian's."""
    cands = []
    if os.environ.get("PPT_WORDNET"):
        cands.append(Path(os.environ["PPT_WORDNET"]))
    for root in filter(None, os.environ.get("NLTK_DATA", "").split(os.pathsep)):
        cands.append(Path(root) / "corpora" / "wordnet")
    cands += [Path.home() / "nltk_data" / "corpora" / "wordnet", DEBIAN_DIR]
    return next((d for d in cands if d.is_dir() and _has_files(d)), None)


def wordnet_available() -> bool:
    """NLTK importable and WordNet's files present (nothing is loaded)."""
    import importlib.util

    return importlib.util.find_spec("nltk") is not None and find_wordnet_source() is not None


def nltk_wordnet_root(source: Path) -> Path:
    """A directory NLTK's reader accepts: ``source`` itself when it has ``lexnames``, else a copy in the
    ppt cache with ``lexnames`` written (copied, not linked: NLTK resolves links to their targets)."""
    if (source / "lexnames").is_file():
        return source
    from ppt.cache import cache_dir

    dest = Path(cache_dir()) / "wordnet-3.0" / "corpora" / "wordnet"
    if not (dest / "lexnames").is_file():
        tmp = dest.with_name(f".wordnet-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for f in source.iterdir():
            if f.is_file():
                shutil.copyfile(f, tmp / f.name)
        (tmp / "lexnames").write_text(lexnames_text())
        try:
            tmp.rename(dest)
        except OSError:  # another process got there first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def load_wordnet() -> Any:
    """NLTK's WordNet reader over the local files; PptError (exit 78) with the install command when absent."""
    from ppt.io import ExitCode, PptError

    try:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError:
        raise PptError(
            "WordNet similarity needs NLTK, which is not installed", exit_code=ExitCode.CONFIG, hint=WORDNET_INSTALL
        ) from None
    src = find_wordnet_source()
    if src is None:
        raise PptError(
            "WordNet's files were not found (Debian wordnet-base, $NLTK_DATA or $PPT_WORDNET)",
            exit_code=ExitCode.CONFIG,
            hint=WORDNET_INSTALL,
        )
    try:
        root = nltk_wordnet_root(src)
        import nltk.data

        data_dir = str(root.parents[1])  # NLTK reads only under its data path (nltk.pathsec)
        if data_dir not in nltk.data.path:
            nltk.data.path.append(data_dir)
        import warnings

        with warnings.catch_warnings():  # "multilingual functions are not available": no OMW here, none used
            warnings.simplefilter("ignore", UserWarning)
            return WordNetCorpusReader(str(root), None)
    except (OSError, LookupError, ValueError) as e:
        raise PptError(
            f"cannot read WordNet: {type(e).__name__}", exit_code=ExitCode.CONFIG, hint=WORDNET_INSTALL
        ) from None


class WordNetSimilarity:
    """``sim(word, candidates) -> list[float]``: max path similarity over synsets, memoised per pair.

    NLTK's ``Synset.path_similarity`` with its default ``simulate_root=True``, computed from memoised
    ancestor-distance maps: NLTK rebuilds both synsets' hypernym closures on every call and re-reads the
    data file's header (``get_version``) twice per pair, which made WordNet ProSan's largest cost
    (values are the same: a test compares them with NLTK's on random pairs)."""

    source = "wordnet path similarity (NLTK reader)"

    def __init__(self, reader: Any):
        self.wn = reader
        self._noun_has_root = reader.get_version() != "1.6"  # NLTK's _needs_root, read once
        self._pair = lru_cache(maxsize=1 << 18)(self._pair_uncached)
        self._synsets = lru_cache(maxsize=1 << 16)(self._synsets_uncached)
        self._ancestors = lru_cache(maxsize=1 << 16)(self._ancestors_uncached)

    def _synsets_uncached(self, word: str) -> tuple:
        nouns = tuple(self.wn.synsets(word, pos="n"))
        return nouns if nouns else tuple(self.wn.synsets(word))

    def _needs_root(self, s: Any) -> bool:
        return not (s.pos() == "n" and self._noun_has_root)

    def _ancestors_uncached(self, s: Any, simulate_root: bool) -> dict:
        """{ancestor name: hops} over hypernyms and instance hypernyms (breadth first, as NLTK's
        ``_shortest_hypernym_paths``), with NLTK's fake ``*ROOT*`` one hop above the deepest when asked."""
        from collections import deque

        path: dict[str, int] = {}
        queue = deque([(s, 0)])
        while queue:
            x, depth = queue.popleft()
            if x.name() in path:
                continue
            path[x.name()] = depth
            queue.extend((h, depth + 1) for h in x.hypernyms())
            queue.extend((h, depth + 1) for h in x.instance_hypernyms())
        if simulate_root:
            path["*ROOT*"] = max(path.values()) + 1
        return path

    def path_similarity(self, x: Any, y: Any) -> float | None:
        """NLTK's ``x.path_similarity(y)`` (simulate_root=True): 1 / (shortest path + 1), None without one."""
        if x.name() == y.name():
            return 1.0
        root = self._needs_root(x) or self._needs_root(y)
        a, b = self._ancestors(x, root), self._ancestors(y, root)
        if len(b) < len(a):
            a, b = b, a
        d = min((da + b[k] for k, da in a.items() if k in b), default=None)
        return None if d is None else 1.0 / (d + 1)

    def _pair_uncached(self, a: str, b: str) -> float:
        if a == b:
            return 1.0
        sa, sb = self._synsets(a), self._synsets(b)
        best = 0.0
        for x in sa:
            for y in sb:
                s = self.path_similarity(x, y)
                if s is not None and s > best:
                    best = s
                    if best >= 1.0:
                        return 1.0
        return float(best)

    def __call__(self, word: str, candidates: list[str]) -> list[float]:
        w = word.lower()
        return [self._pair(w, c.lower()) for c in candidates]


__all__ = [
    "WORDNET_INSTALL",
    "WordNetSimilarity",
    "find_wordnet_source",
    "lexnames_text",
    "load_wordnet",
    "nltk_wordnet_root",
    "wordnet_available",
]

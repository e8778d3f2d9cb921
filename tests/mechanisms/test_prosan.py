"""ProSan: scores against hand-computed values on a tiny random LM, the protected share, POS selection,
the replacement sampler against its closed form (chi-square at alpha 1e-6), number formats, PHR on
what survives, and the configuration errors (exit 78). Real spaCy / WordNet tests are integration-marked
and skipped when those are absent."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.io import ExitCode, PptError
from ppt.mechanisms import get_mechanism
from ppt.mechanisms.policy import DIGITS, PERTURB
from ppt.mechanisms.prosan import scores as sc
from ppt.mechanisms.prosan.replace import candidate_sets, replacement_probs, sample_columns
from ppt.metrics.phr import phr
from ppt.rng import record_generator
from ppt.testing.prosan import RuleTagger, make_tiny_masked_lm

ALPHA = 1e-6
pytestmark = pytest.mark.filterwarnings("ignore::ppt.log.LeakWarning")


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    return make_tiny_masked_lm(tmp_path_factory.getbasetemp() / "tiny-mlm")


@pytest.fixture(scope="module")
def build(tiny_lm, tiny_mlm):
    def make(**params):
        kw = {
            "model": str(tiny_lm),
            "mlm": str(tiny_mlm),
            "tagger": RuleTagger(),
            "similarity": "embedding",
            "device": "cpu",
            "quiet": True,
            "always": "none",  # the paper's share rule alone; the always-protected classes have their own tests
            **params,
        }
        return get_mechanism("prosan", 1.0, **kw)

    return make


# ---------------------------------------------------------------------------- scores, by hand


def _hand_scores(model, prompt, response, words, n_words):
    """Importance and self-information the slow way: self-information from one forward pass per prefix,
    gradients from HF's own loss with a hook on the embedding output."""
    ids = torch.tensor([prompt + response])
    info = [0.0] * len(prompt)
    with torch.no_grad():
        for j in range(1, len(prompt)):
            logits = model(input_ids=torch.tensor([prompt[:j]])).logits[0, -1]
            info[j] = float(-torch.log_softmax(logits.double(), -1)[prompt[j]])
    labels = ids.clone()
    if response:
        labels[0, : len(prompt)] = -100
    grads = {}
    emb = model.get_input_embeddings()

    def keep(_module, _args, out):
        out.retain_grad()
        grads["e"] = out

    h = emb.register_forward_hook(keep)
    try:
        model.zero_grad()
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
    finally:
        h.remove()
    g = grads["e"].grad[0, : len(prompt)].double()
    k_raw = np.zeros(n_words)
    i_raw = np.zeros(n_words)
    for w in range(n_words):
        toks = [t for t, ww in enumerate(words) if ww == w]
        k_raw[w] = float(g[toks].mean(0).norm())
        i_raw[w] = sum(info[t] for t in toks)

    def mm(x):
        return (x - x.min()) / (x.max() - x.min())

    return mm(k_raw), mm(i_raw), i_raw


@pytest.mark.parametrize("response", [[], [7, 11, 19]])
def test_importance_and_self_information_match_hand_computation(response):
    from ppt.testing import tiny_llama

    model = tiny_llama(40, seed=5).double()
    prompt = [1, 5, 9, 14, 3, 22, 8, 30, 2]  # BOS first
    words = np.array([-1, 0, 0, 1, 2, 2, 2, 3, 4])
    got = sc.score_batch(model, [prompt], [response], [words], [5], n_prefix=1)[0]
    k, o, i_raw = _hand_scores(model, prompt, response, words.tolist(), 5)
    np.testing.assert_allclose(got.importance, k, atol=1e-6)
    np.testing.assert_allclose(got.privacy, o, atol=1e-6)
    np.testing.assert_allclose(got.self_info, i_raw, rtol=1e-6)
    assert got.entropy == pytest.approx(i_raw.mean(), rel=1e-6)


def test_batched_scores_equal_one_record_at_a_time():
    from ppt.testing import tiny_llama

    model = tiny_llama(40, seed=6).double()
    prompts = [[1, 5, 9, 14, 3], [1, 22, 8, 30, 2, 17, 4, 6]]
    words = [np.array([-1, 0, 1, 1, 2]), np.array([-1, 0, 1, 2, 2, 3, -1, 4])]
    responses = [[7, 11], []]
    together = sc.score_batch(model, prompts, responses, words, [3, 5], 1)
    for i in range(2):
        alone = sc.score_batch(model, [prompts[i]], [responses[i]], [words[i]], [[3, 5][i]], 1)[0]
        np.testing.assert_allclose(together[i].importance, alone.importance, atol=1e-9)
        np.testing.assert_allclose(together[i].self_info, alone.self_info, atol=1e-9)


@pytest.mark.parametrize("first_is_eos", [False, True])
def test_one_pass_respond_and_score_equals_generate_then_score(first_is_eos):
    """respond_and_score (one left-padded pass with a KV cache, greedy decoding inside the autograd graph)
    gives the same responses and scores as HF generate followed by score_batch, record by record and batched;
    a record whose response is empty (EOS first) is scored on its own prompt."""
    from ppt.testing import tiny_llama

    model = tiny_llama(40, seed=7).double()
    prompts = [[1, 5, 9, 14, 3], [1, 22, 8, 30, 2, 17, 4, 6], [1, 12, 13]]
    words = [np.array([-1, 0, 1, 1, 2]), np.array([-1, 0, 1, 2, 2, 3, -1, 4]), np.array([-1, 0, 1])]
    n_words = [3, 5, 2]
    free = sc.greedy_responses(model, [prompts[0]], 4, 0, [])
    eos = [free[0][0]] if first_is_eos else [39]
    together, resp_t = sc.respond_and_score(model, prompts, words, n_words, 1, 4, 0, eos)
    for i in range(3):
        ref_resp = sc.greedy_responses(model, [prompts[i]], 4, 0, eos)
        ref = sc.score_batch(model, [prompts[i]], ref_resp, [words[i]], [n_words[i]], 1)[0]
        alone, resp_a = sc.respond_and_score(model, [prompts[i]], [words[i]], [n_words[i]], 1, 4, 0, eos)
        assert resp_a[0] == resp_t[i] == ref_resp[0]
        for got in (alone[0], together[i]):
            np.testing.assert_allclose(got.importance, ref.importance, atol=1e-9)
            np.testing.assert_allclose(got.self_info, ref.self_info, atol=1e-9)
            assert got.entropy == pytest.approx(ref.entropy, abs=1e-9)
    assert (resp_t[0] == []) is first_is_eos


def test_token_to_word_map_uses_each_tokens_last_character():
    cmap, pieces = sc.char_word_map(["", " ", " "], ["Ann", "went", "home"], np.array([True, True, True]))
    assert pieces.tolist() == [0, 1, 2]
    # "Ann" | " we" "nt" | " home": leading spaces belong to the word that follows
    assert sc.token_words([(0, 3), (3, 6), (6, 8), (8, 13), (8, 8)], cmap).tolist() == [0, 1, 1, 2, -1]


# ---------------------------------------------------------------------------- protected share and selection


@pytest.mark.parametrize("lam,h", [(0.5, 0.0), (0.3, -2.0), (1.0, 1.5), (2.0, 3.0)])
def test_protected_share_is_lambda_sigmoid_entropy(lam, h):
    assert sc.protected_share(lam, h) == pytest.approx(min(1.0, lam / (1 + math.exp(-h))))
    assert sc.n_protected(sc.protected_share(lam, h), 7) == min(
        7, math.ceil(7 * min(1.0, lam / (1 + math.exp(-h))) - 1e-9)
    )


TEXT = "Alice met Bob in Paris and London with doctor Carol, farmer Dave and teacher Erin on 12 May."


@pytest.mark.parametrize("lam", [0.1, 0.3, 0.5, 0.7])
def test_mechanism_protects_ceil_gamma_share_of_eligible_words_lowest_importance_first(build, lam):
    mech = build(**{"lambda": lam})
    tb = mech.tokenize_batch([TEXT], reproducible=True)
    meta = tb.meta[0]
    gamma = min(1.0, lam / (1 + math.exp(-meta["entropy"])))
    assert meta["gamma"] == pytest.approx(gamma)
    tags = [p for _, _, p in RuleTagger()([TEXT])[0]]
    eligible = [i for i, p in enumerate(tags) if p in ("NOUN", "PROPN", "NUM")]
    assert meta["n_eligible"] == len(eligible)
    chosen = np.flatnonzero((tb.actions == PERTURB) | (tb.actions == DIGITS))
    assert len(chosen) == math.ceil(gamma * len(eligible) - 1e-9)
    # the chosen are the least important eligible words
    rest = sorted(set(eligible) - set(chosen.tolist()))
    if len(chosen) and rest:
        assert tb.k[chosen].max() <= tb.k[rest].min()


def test_always_classes_are_protected_whatever_their_importance(build):
    """entities (the tagger's NER), numbers and special-category words are protected even when the gamma share
    is tiny; without the rule (always=none) the same share leaves most of them."""
    protected = ("Bob", "Paris", "London", "Carol", "Dave", "Erin", "12", "doctor", "farmer", "teacher")
    tags = RuleTagger()([TEXT])[0]
    at = {TEXT[a:b]: i for i, (a, b, _) in enumerate(tags)}
    mech = build(**{"lambda": 0.1, "always": "entities,numbers,categories"})
    tb = mech.tokenize_batch([TEXT], reproducible=True)
    assert all(tb.actions[at[w]] != 1 for w in protected)  # KEEP = 1
    assert tb.meta[0]["n_always"] >= len(protected) - tb.meta[0]["n_protected"]
    [res] = mech.sanitize_batch([TEXT], [record_generator(4, 0)])
    out = [res.text[a:b] for a, b, _ in RuleTagger()([res.text])[0]]
    assert len(out) == len(tags)  # one word for one word
    assert all(out[at[w]] != w for w in protected)
    assert "met" in res.text.split() and "with" in res.text.split()  # the rest is still ProSan's to keep
    assert mech.params()["always"] == "entities,numbers,categories" and "always" in mech.signature_params()
    from ppt.detect.categories import lexicon_tag

    # the lexicon decides which words are protected: its tag is in the signature, only with categories
    assert mech.signature_params()["always"] == f"entities.numbers.categories#{lexicon_tag()}"
    assert build(always="entities,numbers").signature_params()["always"] == "entities.numbers"
    share_only = build(**{"lambda": 0.1}).tokenize_batch([TEXT], reproducible=True)
    assert sum(share_only.actions[at[w]] == 1 for w in protected) > len(protected) // 2
    only_numbers = build(**{"lambda": 0.1, "always": "numbers"}).tokenize_batch([TEXT], reproducible=True)
    assert only_numbers.actions[at["12"]] == DIGITS


def test_always_rejects_unknown_classes_and_a_tagger_without_entities(build):
    with pytest.raises(ValueError, match="always"):
        build(always="entities,zipcodes")

    class NoNer:
        name = "no-ner"

        def __call__(self, texts):
            return RuleTagger()(texts)

    with pytest.raises(ValueError, match="entities"):
        build(always="entities", tagger=NoNer()).prepare()
    assert build(always="numbers", tagger=NoNer()).prepare().always == ("numbers",)


def test_only_selected_pos_are_replaced(build):
    mech = build(**{"lambda": 5.0, "pos": "PROPN"})  # gamma = 1: every proper noun, nothing else
    tb = mech.tokenize_batch([TEXT], reproducible=True)
    tags = [p for _, _, p in RuleTagger()([TEXT])[0]]
    changed = np.flatnonzero(tb.actions != 1)  # KEEP = 1
    assert changed.size and all(tags[i] == "PROPN" for i in changed.tolist())
    assert sum(t == "PROPN" for t in tags) == changed.size
    [res] = mech.sanitize_batch([TEXT], [record_generator(3, 0)])
    out_words = res.text.split()
    # verbs, stopwords, common nouns and numbers are untouched
    for w in ("met", "in", "and", "with", "doctor", "farmer", "teacher", "12"):
        assert w in out_words
    for name in ("Alice", "Bob", "Paris", "London", "Carol", "Dave", "Erin", "May"):
        assert name not in res.text


def test_numbers_keep_their_format_with_fresh_digits(build):
    mech = build(**{"lambda": 5.0, "pos": "NUM"})
    text = "Call 555-0134 or 020.7946.0958 before 2019, room 42."
    outs = [mech.sanitize_batch([text], [record_generator(s, 0)])[0].text for s in range(20)]
    shape = re.sub(r"\d", "0", text)
    assert all(re.sub(r"\d", "0", o) == shape for o in outs)
    assert all(o != text for o in outs)
    assert len(set(outs)) > 15  # fresh digits, not a fixed mapping


# ---------------------------------------------------------------------------- the sampler


def test_replacement_probs_closed_form():
    k = torch.tensor([0.9, 0.1, 0.5], dtype=torch.float64)
    o = torch.tensor([0.2, 0.8, 0.5], dtype=torch.float64)
    sims = torch.tensor([[1.0, 0.5, 0.0], [0.9, 0.1, 0.3], [0.2, 0.7, 0.4]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True], [True, True, False], [True, True, True]])
    p = replacement_probs(k, o, sims, mask, scale=3.0)
    for i in range(3):
        w = np.exp((float(k[i]) - float(o[i])) * 3.0 * sims[i].numpy()) * mask[i].numpy()
        np.testing.assert_allclose(p[i].numpy(), w / w.sum(), rtol=1e-12)
    assert p[2].tolist() == pytest.approx([1 / 3] * 3)  # K = O: uniform over the set


def test_candidate_set_stops_at_cumulative_tau():
    probs = torch.tensor([[0.05, 0.5, 0.3, 0.15, 0.0]])
    cols, mask = candidate_sets(probs, tau=0.8, max_candidates=5)
    assert cols[0][mask[0]].tolist() == [1, 2]  # 0.5 < 0.8 <= 0.8
    cols, mask = candidate_sets(probs, tau=0.81, max_candidates=5)
    assert cols[0][mask[0]].tolist() == [1, 2, 3]
    cols, mask = candidate_sets(probs, tau=1.0, max_candidates=5)
    assert cols[0][mask[0]].tolist() == [1, 2, 3, 0]  # zero-probability columns never enter
    cols, mask = candidate_sets(probs, tau=0.01, max_candidates=5)
    assert cols[0][mask[0]].tolist() == [1]


def test_inverse_cdf_sampler_matches_probabilities():
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3]], dtype=torch.float64).repeat(40000, 1)
    u = torch.rand(40000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    counts = np.bincount(sample_columns(p, u).numpy(), minlength=4)
    assert counts[1] == 0
    keep = [0, 2, 3]
    assert stats.chisquare(counts[keep], 40000 * np.array([0.1, 0.6, 0.3])).pvalue > ALPHA


@pytest.mark.slow(reason="a chi-square test over many draws of the tiny masked LM")
def test_mechanism_replacements_follow_eq10_chi_square(build):
    """End to end through the mechanism: one word replaced N times (one uniform each); the empirical
    distribution of replacements matches exp((K-O) * scale * s_c) over the tau-set computed here from the
    masked LM, and rejects the same weights with the sign of (K - O) flipped (the test has power)."""
    from ppt.lm.base import gathered_logits

    scale = 8.0
    mech = build(scale=scale, tau=0.6, **{"lambda": 5.0, "pos": "PROPN"})
    text = "yesterday Zorba ate a mango near the lake"
    tb = mech.tokenize_batch([text], reproducible=True)
    [p] = np.flatnonzero(tb.actions == PERTURB).tolist()
    n = 6000
    u = torch.rand(n, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    positions = np.full(n, p)
    new_ids, _ = mech.perturb(tb, positions, u, reproducible=False)
    # the closed form, computed here
    tok = mech.mlm_tok
    s = int(tb.starts[p])
    ids = tok(text[:s] + tok.mask_token + text[s + len("Zorba") :])["input_ids"]
    m = ids.index(tok.mask_token_id)
    with torch.no_grad():
        logits = gathered_logits(
            mech.mlm,
            torch.tensor([ids]),
            torch.ones(1, len(ids), dtype=torch.long),
            torch.tensor([0]),
            torch.tensor([m]),
        )[0].double()
    cand = mech.candidates
    q = torch.softmax(logits[cand], 0)
    order = torch.argsort(q, descending=True, stable=True)
    cum = torch.cumsum(q[order], 0) - q[order]
    in_set = order[cum < 0.6]
    emb = torch.nn.functional.normalize(mech.mlm.get_input_embeddings().weight.detach().double(), dim=1)
    wid = tok("Zorba", add_special_tokens=False)["input_ids"]
    v = torch.nn.functional.normalize(emb[wid].mean(0), dim=0)
    sims = (emb[cand[in_set]] @ v).clamp(0, 1)
    kd, od = float(tb.k[p]), float(tb.o[p])
    assert abs(kd - od) > 0.05 and float(sims.max() - sims.min()) > 0.1  # the weights are not flat

    def expected(sign):
        w = torch.exp(sign * (kd - od) * scale * sims)
        return (w / w.sum()).numpy()

    ids_in_set = cand[in_set].tolist()
    counts = np.array([(new_ids == i).sum() for i in ids_in_set])
    assert counts.sum() == n  # nothing outside the tau-set
    assert stats.chisquare(counts, n * expected(1.0)).pvalue > ALPHA
    assert stats.chisquare(counts, n * expected(-1.0)).pvalue < ALPHA


def test_seeded_output_is_reproducible_and_unseeded_batches_run(build):
    mech = build()
    a = mech.sanitize_batch([TEXT, "Bob went to London."], [record_generator(9, i) for i in range(2)])
    b = mech.sanitize_batch([TEXT, "Bob went to London."], [record_generator(9, i) for i in range(2)])
    assert [r.text for r in a] == [r.text for r in b]
    mixed = build(batching="mixed")
    c = mixed.sanitize_batch(
        [TEXT, "Bob went to London."], [record_generator(None, i) for i in range(2)], reproducible=False
    )
    assert len(c) == 2 and all(r.accounting.n_perturbed > 0 for r in c)
    with pytest.raises(ValueError, match="batching"):
        build(batching="sometimes")


def test_stamp_says_no_dp_guarantee_never_an_eps(build):
    from ppt.mechanisms.privacy import privacy_block

    mech = build()
    [res] = mech.sanitize_batch([TEXT], [record_generator(1, 0)])
    block = privacy_block(mech, res.accounting)
    assert block["proven"]["notion"] == "none"
    assert block["proven"]["eps"] == "inf" and "eps_per_token" not in block["proven"]
    assert any("no DP guarantee" in k for k in block["unprotected"])
    params = mech.stamp()["params"]
    for key in ("lambda", "tau", "model", "mlm", "similarity", "scale", "pos"):
        assert key in params


def test_eps_and_bad_parameters_rejected_before_loading(tiny_lm):
    with pytest.raises(ValueError, match="no eps"):
        get_mechanism("prosan", 3.0, tagger=RuleTagger())
    for bad in ({"tau": 0}, {"tau": 1.5}, {"lambda": -1}, {"pos": ""}, {"similarity": "glove"}, {"max_candidates": 0}):
        with pytest.raises(ValueError):
            get_mechanism("prosan", 1.0, tagger=RuleTagger(), **bad)


# ---------------------------------------------------------------------------- PHR on outputs


def test_phr_counts_what_survives_not_what_was_flagged(build):
    """ProSan flags (replaces) one 'Paris' of two; the other survives: PHR counts the item as leaked."""
    mech = build(**{"lambda": 0.5, "pos": "PROPN"})
    text = "Paris is near Paris"
    tb = mech.tokenize_batch([text], reproducible=True)
    assert (tb.actions == PERTURB).sum() == 1  # one of the two occurrences is flagged
    [res] = mech.sanitize_batch([text], [record_generator(2, 0)])
    assert res.accounting.n_perturbed == 1
    assert phr(["Paris"], res.text) == {"absent": 0, "total": 1, "phr": 0.0}


# ---------------------------------------------------------------------------- exit 78


def test_missing_spacy_is_a_config_error(monkeypatch):
    import sys

    from ppt.mechanisms.prosan.tagging import load_spacy

    monkeypatch.setitem(sys.modules, "spacy", None)
    with pytest.raises(PptError) as e:
        load_spacy("en_core_web_sm")
    assert e.value.exit_code == ExitCode.CONFIG and "pip install" in (e.value.hint or "")


def test_missing_wordnet_is_a_config_error(monkeypatch):
    from ppt.mechanisms.prosan import wordnet

    monkeypatch.setattr(wordnet, "find_wordnet_source", lambda: None)
    with pytest.raises(PptError) as e:
        wordnet.load_wordnet()
    assert e.value.exit_code == ExitCode.CONFIG and "wordnet-base" in (e.value.hint or "")


def test_missing_lm_is_a_config_error_in_prepare(tiny_mlm):
    mech = get_mechanism(
        "prosan",
        1.0,
        model="/nonexistent/lm",
        mlm=str(tiny_mlm),
        tagger=RuleTagger(),
        similarity="embedding",
        device="cpu",
    )
    with pytest.raises(PptError) as e:
        mech.prepare()
    assert e.value.exit_code == ExitCode.CONFIG


def test_cli_exits_78_before_reading_input(tiny_mlm):
    from tests.helpers import ppt

    r = ppt(
        "sanitize",
        "--mech",
        "prosan",
        "--model",
        "/nonexistent/lm",
        "-p",
        f"mlm={tiny_mlm}",
        "-p",
        "similarity=embedding",
        stdin='{"text": "SECRET-NAME lives here"}\n',
    )
    assert r.returncode == 78
    assert r.stdout == "" and "SECRET-NAME" not in r.stderr


def test_lexnames_file_lists_wordnet_lexicographer_files():
    from ppt.mechanisms.prosan.wordnet import lexnames_text

    lines = lexnames_text().splitlines()
    assert (
        len(lines) == 45
        and lines[0] == "00\tadj.all\t3"
        and lines[18] == "18\tnoun.person\t1"
        and lines[44] == "44\tadj.ppl\t3"
    )


# ---------------------------------------------------------------------------- real spaCy / WordNet


def _spacy_ready() -> bool:
    try:
        import spacy  # noqa: F401

        from tests.helpers import installed

        return installed("en_core_web_sm")
    except ImportError:
        return False


@pytest.mark.integration
@pytest.mark.skipif(
    not _spacy_ready(),
    reason="spaCy or en_core_web_sm not installed (pip install 'ppt-private-prompts[prosan]' && ppt models install en_core_web_sm)",
)
def test_spacy_tagger_tags_names_nouns_and_numbers():
    from ppt.mechanisms.prosan.tagging import SpacyTagger

    text = "A 30-year-old farmer named James lives in Boston."
    tags = {text[s:e]: p for s, e, p in SpacyTagger()([text])[0]}
    assert tags["James"] == "PROPN" and tags["farmer"] == "NOUN" and tags["Boston"] == "PROPN" and tags["30"] == "NUM"


def _wordnet_ready() -> bool:
    from ppt.mechanisms.prosan.wordnet import wordnet_available

    return wordnet_available()


@pytest.mark.integration
@pytest.mark.skipif(
    not _wordnet_ready(),
    reason="WordNet or NLTK absent (apt-get install wordnet-base wordnet-sense-index; pip install nltk)",
)
def test_wordnet_path_similarity_as_in_the_paper():
    from ppt.mechanisms.prosan.wordnet import WordNetSimilarity, load_wordnet

    sim = WordNetSimilarity(load_wordnet())
    usa, canada, unknown = sim("America", ["USA", "Canada", "Zxqvbn"])
    assert usa == 1.0 and canada == pytest.approx(1 / 3) and unknown == 0.0


@pytest.mark.integration
@pytest.mark.skipif(
    not _wordnet_ready(),
    reason="WordNet or NLTK absent (apt-get install wordnet-base wordnet-sense-index; pip install nltk)",
)
def test_memoised_path_similarity_equals_nltks_on_random_pairs():
    """The memoised ancestor maps give NLTK's own path_similarity (nouns, verbs, adjectives, instances)."""
    from ppt.mechanisms.prosan.wordnet import WordNetSimilarity, load_wordnet

    wn = load_wordnet()
    sim = WordNetSimilarity(wn)
    words = [
        "america",
        "canada",
        "farmer",
        "teacher",
        "run",
        "walk",
        "happy",
        "london",
        "paris",
        "diabetes",
        "asthma",
        "nurse",
        "engineer",
        "quickly",
        "blue",
        "dog",
        "bank",
        "river",
        "seven",
        "doctor",
    ]
    syn = [s for w in words for s in wn.synsets(w)[:3]]
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, len(syn), size=(400, 2))
    for i, j in pairs:
        assert sim.path_similarity(syn[i], syn[j]) == syn[i].path_similarity(syn[j])
    for a in words[:6]:
        expect = [
            max((x.path_similarity(y) or 0.0 for x in sim._synsets(a) for y in sim._synsets(b)), default=0.0)
            for b in words
        ]
        assert sim(a, words) == pytest.approx(expect, abs=0, rel=0)


# ---------------------------------------------------------------------------- e-mail addresses


class _XEmailTagger:
    """Whitespace words (a final '.' split off); an e-mail address is tagged X, as spaCy often tags it."""

    name = "x-email-tagger"

    def __call__(self, texts):
        out = []
        for text in texts:
            tags = []
            for m in re.finditer(r"\S+", text):
                s, e = m.start(), m.end()
                if text[e - 1] == ".":
                    e -= 1
                w = text[s:e]
                pos = (
                    "X"
                    if "@" in w
                    else "NUM"
                    if any(c.isdigit() for c in w)
                    else "VERB"
                    if w in ("Write", "call")
                    else "NOUN"
                )
                tags.append((s, e, pos))
                if e < m.end():
                    tags.append((e, m.end(), "PUNCT"))
            out.append(tags)
        return out


MAIL_TEXT = "Write to anna.smith42@example.org or call 555-0134 today."


def _shape(s: str) -> str:
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "0", s)))


def test_email_addresses_are_eligible_whatever_their_tag_and_keep_their_format(build):
    mech = build(**{"lambda": 5.0, "tagger": _XEmailTagger()})  # gamma = 1: every eligible word
    outs = [mech.sanitize_batch([MAIL_TEXT], [record_generator(s, 0)])[0].text for s in range(20)]
    mails = [re.search(r"\S+@\S+\.org", o).group() for o in outs]
    assert all(_shape(m) == _shape("anna.smith42@example.org") for m in mails)  # '@', dots, case, digits kept
    assert all(m.endswith(".org") and "anna" not in m and "smith" not in m and "example" not in m for m in mails)
    assert len(set(mails)) == 20
    assert all(re.search(r"\b\d{3}-\d{4}\b", o) and "555-0134" not in o for o in outs)  # the phone: fresh digits
    p = mech.params()
    assert p["emails"] is True and "e-mail" in p["email_rule"] and mech.signature_params()["email"] is True


def test_emails_off_leaves_an_x_tagged_address_alone(build):
    mech = build(**{"lambda": 5.0, "tagger": _XEmailTagger(), "emails": False})
    out = mech.sanitize_batch([MAIL_TEXT], [record_generator(0, 0)])[0].text
    assert "anna.smith42@example.org" in out and "555-0134" not in out
    assert mech.params()["email_rule"].startswith("off")


def test_fresh_email_letters_and_digits_are_uniform():
    from ppt.mechanisms.prosan.formats import fresh_email

    g = np.random.default_rng(0)
    outs = [fresh_email("abcdefghij0123456789@x.io", g) for _ in range(600)]
    letters = np.array([c for o in outs for c in o[:10]])
    digits = np.array([c for o in outs for c in o[10:20]])
    lc = np.unique(letters, return_counts=True)[1]
    dc = np.unique(digits, return_counts=True)[1]
    assert len(lc) == 26 and len(dc) == 10
    assert stats.chisquare(lc).pvalue > ALPHA and stats.chisquare(dc).pvalue > ALPHA
    assert all(o.endswith("@" + o.split("@")[1]) and o.split("@")[1][1:] == ".io" for o in outs)


def test_threads_auto_uses_one_thread_on_a_busy_cpu(monkeypatch):
    from ppt.mechanisms.prosan import threads as th

    assert th.parse_threads(None) == "auto" and th.parse_threads("3") == 3
    with pytest.raises(ValueError):
        th.parse_threads(0)
    n = torch.get_num_threads()
    monkeypatch.setattr(th.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(th.os, "getloadavg", lambda: (2.5, 1.0, 1.0))
    assert th.resolve_threads("auto") == 1 and th.resolve_threads(4) == 4
    with th.torch_threads("auto"):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == n
    monkeypatch.setattr(th.os, "getloadavg", lambda: (0.5, 1.0, 1.0))
    assert th.resolve_threads("auto") == n


def test_bfloat16_scores_in_bfloat16_and_is_named_in_the_signature(build):
    """dtype=bfloat16 loads the causal LM in bfloat16 (the speed option docs/pii measures), still scores and
    samples every record, and is a different mechanism in the signature; float32 signatures are unchanged."""
    import torch

    with pytest.raises(ValueError, match="dtype"):
        build(dtype="float16")
    fp32, bf16 = build(), build(dtype="bfloat16").prepare()
    assert next(bf16.lm.parameters()).dtype == torch.bfloat16
    assert "dtype" not in fp32.signature_params() and bf16.signature_params()["dtype"] == "bfloat16"
    [res] = bf16.sanitize_batch([TEXT], [record_generator(4, 0)])
    assert res.text and res.accounting.n_tokens > 0

"""`ppt sanitize` stamps as a user gets them (issue 16): no seed (finding 3), nothing that depends on the raw
text unless --diagnostics FIELD (finding 7), compact signatures that `ppt mechs --describe` expands, and
readers downstream (query's refusal, attack's space and stopword detection) that take both forms."""

import json

import pytest

from tests.helpers import ppt

SEED = 918273645


def recs(texts):
    return "".join(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(texts))


def sanitize(*args, texts=("Alice Johnson moved to Paris in 2019.",)):
    r = ppt("sanitize", *args, "--quiet", stdin=recs(texts))
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


# ---- finding 3: no seed in any output ---------------------------------------------------------------


@pytest.mark.parametrize("stamp", ["compact", "full"])
def test_seeded_run_stamps_seeded_true_never_the_seed(stamp):
    for rec in sanitize("-m", "rantext", "-e", "6", "--seed", str(SEED), "--stamp", stamp):
        st = rec["ppt"]["sanitize"]
        assert st["seeded"] is True and "seed" not in st
        assert str(SEED) not in json.dumps(rec)
    [rec] = sanitize("-m", "rantext", "-e", "6")
    assert rec["ppt"]["sanitize"]["seeded"] is False


# ---- finding 7: data-independent stamps by default ---------------------------------------------------


@pytest.mark.parametrize(
    ("mech", "texts"),
    [
        (["-m", "rantext", "-e", "6"], ("house", "doctor", "river")),  # one cl100k token each
        (["-m", "tem", "-e", "6", "--space", "glove-6b-50d"], ("Patel", "house", "surpluses")),
    ],
)
@pytest.mark.slow(reason="sanitizes on the real spaces (cl100k-minilm, glove-6b-50d), once per mechanism")
def test_stamp_does_not_depend_on_the_raw_words(mech, texts):
    """One-word records with the same number of perturbed tokens get byte-identical stamps; the list
    sizes that singled out words ("Patel" -> 894) are only in the --diagnostics field."""
    out = sanitize(*mech, texts=texts)
    stamps = {json.dumps(r["ppt"], sort_keys=True) for r in out}
    assert len(stamps) == 1, stamps
    diag = sanitize(*mech, "--diagnostics", "diag", "--seed", "1", texts=texts)
    sizes = [r["diag"]["accounting"] for r in diag]
    key = "adjacency_list_size" if mech[1] == "rantext" else "truncated_set_size"
    assert all(key in s for s in sizes) and len({json.dumps(s[key]) for s in sizes}) > 1
    for r in diag:
        assert r["ppt"]["sanitize"]["diagnostics_field"] == "diag" and key not in json.dumps(r["ppt"])


def test_query_refuses_templates_naming_the_diagnostics_field():
    from ppt.io import RecordError
    from ppt.lm.templates import load_template
    from ppt.stages.query import QuerySpec, check_sanitized

    [rec] = sanitize("-m", "rantext", "-e", "6", "--diagnostics", "diag")
    err = check_sanitized(rec, QuerySpec(model="m", template=load_template("Continue: {diag}", "{text}", "x")))
    assert isinstance(err, RecordError) and err.type == "raw_field_in_template"
    assert check_sanitized(rec, QuerySpec(model="m", template=load_template("Continue: {text}", "{text}", "x"))) is None


def test_diagnostics_field_must_differ_from_the_others():
    r = ppt("sanitize", "--keep-original", "raw", "--diagnostics", "raw", stdin=recs(["a"]))
    assert r.returncode == 2 and "two different fields" in r.stderr


def test_diagnostics_make_the_stage_output_private():
    from ppt.stages.sanitize import SanitizeStage
    from ppt.stages.sanitize_spec import SanitizeSpec

    class M:
        name = "x"

    assert SanitizeStage(M(), SanitizeSpec("x", diagnostics="d")).private_fields == ["d"]
    assert SanitizeStage(M()).private_fields == []


# ---- compact stamps, --describe, readers --------------------------------------------------------------


@pytest.mark.slow(reason="loads the real default space (cl100k-minilm)")
def test_compact_stamp_is_small_and_describe_expands_it():
    text = "Alice Johnson moved to Paris in 2019 to study medicine at the Sorbonne."
    [compact] = sanitize("-m", "rantext", "-e", "6", "--seed", "3", texts=(text,))
    [full] = sanitize("-m", "rantext", "-e", "6", "--seed", "3", "--stamp", "full", texts=(text,))
    assert compact["text"] == full["text"]
    small, big = (len(json.dumps(r["ppt"], separators=(",", ":"))) for r in (compact, full))
    assert small < 450 and big > 2 * small
    st = compact["ppt"]["sanitize"]
    sig = st["signature"]
    assert sig == full["ppt"]["sanitize"]["signature"] and "params" not in st and "params" in full["ppt"]["sanitize"]
    assert (
        sig.startswith("rantext|eps:6|space:cl100k-minilm:11000#")
        and "|z:calibrated|pol:drop.digits.keep.perturb.sentence|v:" in sig
    )
    r = ppt("mechs", "--describe", sig)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["mechanism"] == "rantext" and d["eps"] == 6.0 and d["space"] == "cl100k-minilm:11000"
    assert d["params"]["z"] == "calibrated" and d["policy"]["numbers"] == "random-digits"
    bad = ppt("mechs", "--describe", "no signature")
    assert bad.returncode == 2 and "signature" in bad.stderr


@pytest.mark.slow(reason="builds the glove space and sanitizes twice")
def test_attack_readers_take_compact_and_full_stamps():
    from ppt.stages.attack import stamped_keeps_stopwords, stamped_space

    for stamp in ("compact", "full"):
        [rec] = sanitize("-m", "custext+", "-e", "1", "--space", "glove-6b-50d:2000", "--stamp", stamp)
        assert stamped_space(rec) == "glove-6b-50d:2000" and stamped_keeps_stopwords(rec)
        [rec] = sanitize("-m", "rantext", "-e", "6", "--stopwords", "keep", "--stamp", stamp)
        assert stamped_space(rec) == "cl100k-minilm:11000" and stamped_keeps_stopwords(rec)
        [rec] = sanitize("-m", "rantext", "-e", "6", "--stamp", stamp)
        assert not stamped_keeps_stopwords(rec)


def test_a_second_release_keeps_the_first_in_the_stamp_and_composes_them():
    """Sanitizing a record twice (here: its raw text, kept by --keep-original, released again) keeps both
    releases and composes their proven figures (second reading: the second stamp used to replace the first)."""
    first = ppt(
        "sanitize",
        "-m",
        "santext",
        "--space",
        "glove-6b-50d:2000",
        "-e",
        "1",
        "--seed",
        "1",
        "--keep-original",
        "raw",
        "-q",
        stdin=recs(["the river bank"]),
    )
    assert first.returncode == 0, first.stderr
    once = json.loads(first.stdout)["ppt"]["sanitize"]
    assert "earlier" not in once and "all_releases" not in once["privacy"]
    second = ppt(
        "sanitize",
        "-m",
        "santext",
        "--space",
        "glove-6b-50d:2000",
        "-e",
        "1",
        "--seed",
        "2",
        "--text-field",
        "raw",
        stdin=first.stdout,
    )
    assert second.returncode == 0, second.stderr
    assert "already carry a ppt.sanitize stamp" in second.stderr
    twice = json.loads(second.stdout)["ppt"]["sanitize"]
    assert [r["signature"] for r in twice["earlier"]] == [once["signature"]]
    total = twice["privacy"]["all_releases"]
    assert total["releases"] == 2
    assert total["eps"] == pytest.approx(once["privacy"]["proven"]["eps"] + twice["privacy"]["proven"]["eps"])
    third = ppt("sanitize", "-m", "rantext", "-e", "6", "--text-field", "raw", "-q", stdin=second.stdout)
    ledger = json.loads(third.stdout)["ppt"]["sanitize"]
    assert len(ledger["earlier"]) == 2 and ledger["privacy"]["all_releases"]["eps"] is None  # RANTEXT proves none

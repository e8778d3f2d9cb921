"""Split-N-Denoise's stamp says what its guarantee covers, and the fields it does not cover stay local
(second reading, rows 13-14)."""

from __future__ import annotations

from ppt.lm.templates import Template
from ppt.snd.privacy import snd_fields, snd_privacy
from ppt.stages.query import QuerySpec, check_sanitized


def test_only_the_noisy_rows_are_covered():
    p = snd_fields(snd_privacy(100.0, 1.5, 384, {"id": "m"}), "snd_", ["noisy", "denoised", "clean"])
    assert p["covers"] == ["snd_noisy"]
    assert p["local_only"] == ["snd_denoised", "snd_clean"]
    assert "no low-bit channel" in p["arithmetic"] and p["text_field"].startswith("raw")
    clean = snd_fields(snd_privacy(float("inf"), 1.5, 384, {"id": "m"}), "snd_", ["noisy"])
    assert clean["covers"] == [] and clean["local_only"] == ["snd_noisy"]  # eta = inf covers nothing


def test_query_never_sends_a_local_only_field_even_with_allow_raw():
    rec = {
        "text": "raw",
        "snd_noisy": [0.1],
        "snd_denoised": [0.2],
        "ppt": {"snd": {"privacy": {"covers": ["snd_noisy"], "local_only": ["snd_denoised"]}}},
    }
    for allow_raw in (False, True):
        spec = QuerySpec(model="m", template=Template.parse("{snd_denoised}"), allow_raw=allow_raw)
        err = check_sanitized(rec, spec)
        assert err is not None and err.type == "local_field_in_template"
    # the covered field goes out under --allow-raw (it has no sanitize stamp)
    assert check_sanitized(rec, QuerySpec(model="m", template=Template.parse("{snd_noisy}"), allow_raw=True)) is None


def test_weak_noise_is_warned_before_anything_is_sent():
    """P-m6 (issue 29): `snd embed --server` refused eta = inf but sent eta 1e6 without a word, where inversion
    reads back every token. Noise whose mean norm d/eta is below the clip radius is warned about now."""
    import warnings

    from ppt.log import LeakWarning
    from ppt.stages.snd import weak_noise

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert weak_noise(1e6, 384, 1.694) and weak_noise(500.0, 384, 1.694)
        assert not weak_noise(100.0, 384, 1.694) and not weak_noise(float("inf"), 384, 1.694)
    assert sum(issubclass(w.category, LeakWarning) for w in caught) == 2

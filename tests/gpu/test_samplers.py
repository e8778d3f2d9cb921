"""The GPU samplers (issue 28): every token mechanism's torch sampling path with its tables on the device
(SanText(+), CusText+, TEM, RANTEXT's run-table sampler), Cape's bucketized sampler and its bf16 context
model, and SnD's noise (drawn on the CPU, added, clipped and snapped on the device), each against the
mechanism's exact probabilities (chi-square or Kolmogorov-Smirnov, fixed seeds, alpha 1e-6), and each
drawing what the CPU path draws from the same randomness.

The device is a parameter: ``[cuda]`` is marked ``gpu`` (``pytest -m gpu``; scripts/gpu_kit.sh run runs it,
and it skips where torch sees no CUDA); ``[cpu]`` runs the same bodies on CPU tensors in the normal lane, and
``test_a_doubled_eps_fails`` runs every distribution body with the sampler given 2 x eps (eta for SnD), which
each rejects: the tests can fail. Helpers, closed forms and tiny inputs are the CPU tests' own
(tests/mechanisms, tests/samplers) and the per-class factories (ppt.testing.mechanisms).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from scipy import stats

from ppt.mechanisms.cape import Cape
from ppt.mechanisms.cape import utility as cu
from ppt.rng import record_generator
from ppt.samplers.dchi import privatize
from ppt.testing import bpe_tokenizer, tiny_llama
from ppt.testing.mechanisms import TinyInputs, build_tiny
from tests.mechanisms import test_cape as cape_t
from tests.mechanisms import test_custext as custext_t
from tests.mechanisms import test_rantext as rantext_t
from tests.mechanisms import test_santext as santext_t
from tests.mechanisms import test_tem as tem_t
from tests.samplers.test_dchi import radius_pvalue

ALPHA = 1e-6
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# slow: the [cpu] bodies repeat the samplers' CPU statistical tests (tests/mechanisms, tests/samplers: fast lane) on
# this module's device-parametrised path; the full suite and `-m gpu` (the GPU kit) still run them
pytestmark = [pytest.mark.statistical, pytest.mark.slow(reason="repeats the samplers' CPU statistical tests")]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def on(space, device: str):
    """The same space (same arrays, same cached tables) with its tensors on ``device``."""
    return space if device == "cpu" else dataclasses.replace(space, device_name=device)


def build(name: str, space, device: str, eps: float, **params):
    """``name`` over ``space`` on ``device`` by its class's test factory, sampling with torch (the GPU path,
    here also on CPU tensors)."""
    mech = build_tiny(name, TinyInputs(on(space, device), "", ""), eps, **params)
    mech.backend = "torch"
    return mech


def perturb(mech, rows: np.ndarray, rand: dict) -> tuple[np.ndarray, dict]:
    """The pipeline's step for a batch's perturbed rows (``perturb_batch``): rows and draws go to the
    mechanism's device, outputs come back as numpy."""
    rows = np.asarray(rows, dtype=np.int64)
    return mech.perturb_batch(SimpleNamespace(rows=rows), np.ones(rows.size, bool), [rows.size], rand, True)


def draws(mech, n: int, seed: int) -> dict:
    g = record_generator(seed, 0)
    return mech.draw(n, g)


# ---- the distribution bodies: p-values of the sampler (given eps x factor) against the exact law at eps


def santext_p(spaces, device, factor=1.0, case=0) -> float:
    """SanText / SanText+ over the sensitive set; the second half of the draws reads the row cache. Case 1's
    gaps exceed a band (BAND_NATS): the banded inverse CDF."""
    kind, eps, params, x = [("santext", 2.0, {}, 5), ("santext+", 6.0, {"w": 0.5, "p": 1.0}, 0)][case]
    space = spaces["santext"]
    mech = build(kind, space, device, eps * factor, **params)
    n = 50_000
    outs = [perturb(mech, np.full(n, x), draws(mech, n, 11 + i))[0] for i in range(2)]
    counts = santext_t.counts_over(np.concatenate(outs), mech.sensitive)
    return santext_t.chisquare_ok(counts, santext_t.closed_form(space, x, eps, mech.sensitive))


def custext_p(spaces, device, factor=1.0, case=0) -> float:
    eps, pick = [(2.0, 3), (6.0, 6)][case]
    space = spaces["custext"]
    mech = build("custext+", space, device, eps * factor, k=custext_t.K)
    group = custext_t.groups_of(build("custext+", space, "cpu", eps, k=custext_t.K))[pick]
    x = group[-1] if pick % 2 else group[0]
    out, _ = perturb(mech, np.full(100_000, x), draws(mech, 100_000, pick))
    counts = custext_t.counts_in(out, group)
    return stats.chisquare(counts, custext_t.closed_form(space, group, x, eps) * counts.sum()).pvalue


def tem_p(spaces, device, factor=1.0, case=0) -> float:
    """TEM over [L_x | bottom], the bottom then uniform outside L_x: the whole law over the vocabulary."""
    space = spaces["tem"]
    gamma = float(np.quantile(tem_t.dist(space), [0.2, 0.6][case]))
    eps = tem_t.eps_for_gamma(space, gamma)
    mech = build("tem", space, device, eps * factor)
    probs = tem_t.closed_form(space, eps, gamma)
    x = [0, 21][case]
    out, _ = perturb(mech, np.full(60_000, x), draws(mech, 60_000, x))
    return tem_t.chisquare_p(np.bincount(out, minlength=space.size).astype(float), probs[x])


def rantext_p(spaces, device, factor=1.0, case=0) -> float:
    """RANTEXT's run-table sampler given the radius (|C_r| must be exact too)."""
    space = spaces["rantext"]
    eps, t, j = 4.0, 5, [6, 20][case]
    mech = build("rantext", space, device, eps * factor, z=1.0, sampler="torch")
    d = rantext_t.d16_row(space, t)
    srt = np.sort(d)
    r = float((srt[j] + srt[j + 1]) / 2)  # halfway between neighbours: rounding cannot move membership
    n = 60_000
    u = torch.rand(n, generator=torch.Generator().manual_seed(j), dtype=torch.float64)
    rows = torch.full((n,), t, device=device)
    out, size = mech.sample_given_radius(rows, torch.full((n,), r, dtype=torch.float64, device=device), u.to(device))
    assert out.device.type == torch.device(device).type
    assert (size.cpu().numpy() == (d < r).sum()).all()
    probs = rantext_t.conditional_probs(space, t, r, eps)
    return rantext_t.chisquare_p(np.bincount(out.cpu().numpy(), minlength=space.size).astype(float), probs)


def spread_utilities(v: int, nb: int, seed: int) -> torch.Tensor:
    """Skewed utilities in [0, 1] (0 and 1 included), each at least 0.2 bucket widths from a bucket edge, so
    float32 on any device buckets them as float64 does."""
    g = np.random.default_rng(seed)
    k = np.minimum((g.random(v) ** 2 * nb).astype(int), nb - 1)
    u = (k + 0.2 + 0.6 * g.random(v)) / nb
    u[:2] = 0.0, 1.0
    return torch.from_numpy(u).float()


def cape_kernel_p(spaces, device, factor=1.0, case=0) -> float:
    """Cape's bucketized sampler on a utility row, against the CPU tests' independent numpy closed form.
    Case 1 has 1,100 candidates: on CUDA, the two-level member search (blocks of 1,024) and block sums."""
    eps, nb, u = [(3.0, 6, cape_t.U_FIXED), (8.0, 50, spread_utilities(1100, 50, 1))][case]
    p, _ = cape_t.np_closed_form(u.double().numpy(), eps, 1.0, nb)
    n = [200_000, 30_000][case]
    r = torch.rand((n, 2), generator=torch.Generator().manual_seed(11), dtype=torch.float64)
    uu = u.to(device).unsqueeze(0).expand(n, -1).contiguous()
    cols, _ = cu.sample_bucketized(uu, eps * factor, 1.0, nb, r[:, 0], r[:, 1])
    return cape_t.chisquare_p(np.bincount(cols.cpu().numpy(), minlength=len(u)), p)


def cape_bf16_p(spaces, device, factor=1.0, case=0) -> float:
    """Cape with its context model in bf16 on ``device``: the mechanism's perturb path (head and distance
    products, utilities, chunked sampling) follows the bucketized closed form of one position's utilities
    (the forward pass runs once; its features are repeated). Utilities are float32 (the products run in bf16)."""
    c = spaces["cape"](device, 3.0 * factor)
    toks = c.tokenizer.tokenize(cape_t.TEXTS[0])
    actions, _ = c.plan(toks)
    pos = np.flatnonzero(actions == cape_t.PERTURB)[case : case + 1]
    feats = c.lm.features([toks.ids], [pos])
    u = c.utilities(c.lm.candidate_logits(feats), torch.as_tensor(toks.ids[pos], device=c.device))
    # the CPU tests' closed form from the definition (numpy, float64) of the device's utilities; the kernels' (float32
    # bucket sums, in another order on CUDA) agrees to float32 rounding
    probs, _ = cape_t.np_closed_form(u[0].double().cpu().numpy(), 3.0, c.delta_u, c.buckets)
    assert np.allclose(cu.closed_form(u, 3.0, c.delta_u, c.buckets)[0].cpu().numpy(), probs, rtol=1e-4, atol=0)
    n = 20_000
    c.lm.features = lambda ids, positions, mix_records=False: feats.expand(len(ids), -1)
    g = torch.Generator().manual_seed(31)
    cols, _ = c.perturb([toks.ids] * n, [pos] * n, torch.rand((n, 2), generator=g, dtype=torch.float64))
    return cape_t.chisquare_p(np.bincount(cols.numpy(), minlength=len(probs)), probs)


def snd_p(spaces, device, factor=1.0, case=0) -> float:
    """SnD's release of zero embeddings: radius of x~ - x ~ Gamma(d, 1/eta) (clip and snap negligible here)."""
    d, eta = [(8, 1.0), (384, 100.0)][case]
    x = torch.zeros((40, 500, d), device=device)
    _, z = privatize(x, eta * factor, [record_generator(7, i) for i in range(40)], bound=64.0)
    return radius_pvalue(z.reshape(-1, d).double().cpu().numpy(), d, eta)


BODIES = {
    "santext": santext_p,
    "custext+": custext_p,
    "tem": tem_p,
    "rantext": rantext_p,
    "cape-kernel": cape_kernel_p,
    "cape-bf16": cape_bf16_p,
    "snd": snd_p,
}
CASES = [(name, case) for name in BODIES for case in (0, 1)]


@pytest.fixture
def spaces(array_space):
    """The CPU tests' tiny spaces (on the CPU; bodies move them) and a Cape builder on a tiny Llama."""
    made = {
        "santext": array_space("santext-test", santext_t.words(santext_t.V), seed=7, dim=3),
        "custext": array_space("custext-test", custext_t.words(custext_t.V), seed=3, dim=4),
        "tem": array_space("tiny-tem", tem_t.WORDS, seed=5, dim=8, scale=0.5),
        "rantext": array_space("tiny", rantext_t.WORDS, seed=7, dim=8),
    }
    made["cape"] = lambda device, eps: Cape(eps, model=tiny_causal(), device=device, dtype="bfloat16", logit_bound=2.5)
    return made


def tiny_causal():
    """test_cape.py's tiny causal LM (logits spread so the logit term matters), built afresh (Cape moves it)."""
    tok = bpe_tokenizer(
        cape_t.CORPUS,
        300,
        ["<|endoftext|>"],
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    model = tiny_llama(len(tok), seed=0, max_position_embeddings=32, tie_word_embeddings=True)
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(20)
    return model, tok


@pytest.mark.parametrize("name,case", CASES)
def test_sampler_matches_the_exact_distribution(spaces, device, name, case):
    p = BODIES[name](spaces, device, case=case)
    assert p > ALPHA, (name, case, device, p)


@pytest.mark.parametrize("name,case", CASES)
def test_a_doubled_eps_fails(spaces, name, case):
    """Mutation check: each body above, on CPU tensors, with its sampler given 2 x eps, rejects."""
    p = BODIES[name](spaces, "cpu", factor=2.0, case=case)
    assert p < ALPHA, (name, case, p)


# ---- the device path draws what the CPU path draws, from the same randomness -----------------------


@pytest.mark.parametrize(
    "name,space_key,params",
    [
        ("santext+", "santext", {"w": 0.5, "p": 0.5}),
        ("custext+", "custext", {"k": custext_t.K}),
        ("tem", "tem", {}),
        ("rantext", "rantext", {"z": 1.0}),
    ],
)
def test_device_path_agrees_with_the_cpu_path(spaces, device, name, space_key, params):
    """Every row of the vocabulary, 500 times, with the same draws: the device's torch sampler against the
    CPU's (numpy where the mechanism has one, else torch on CPU tensors). Float sums in another order may
    move a draw that falls within rounding of a CDF step: at most 1 in 1,000 differ."""
    space = spaces[space_key]
    eps = 3.0
    dev = build(name, space, device, eps, **({"sampler": "torch"} if name == "rantext" else {}), **params)
    ref = build_tiny(name, TinyInputs(space, "", ""), eps, **params)
    ref.backend = "numpy" if ref.perturb_rows_np is not None else "torch"
    rows = np.tile(np.arange(space.size), 500)
    rand = draws(ref, rows.size, 3)
    out_d, diag_d = perturb(dev, rows, rand)
    out_c, diag_c = perturb(ref, rows, rand)
    assert (out_d == out_c).mean() >= 0.999, (out_d != out_c).sum()
    for k in diag_c:
        assert (np.asarray(diag_d[k]) == np.asarray(diag_c[k])).mean() >= 0.999, k
    # and the outputs' law is the same: a two-sample test on the whole output histogram
    table = np.vstack([np.bincount(out_d, minlength=space.size), np.bincount(out_c, minlength=space.size)])
    table = table[:, table.sum(0) > 0]
    assert stats.chi2_contingency(table).pvalue > ALPHA


def test_cape_sampler_on_the_device_agrees_with_the_cpu(device):
    """Cape's bucketized sampler with the same utilities and uniforms: on CUDA, block sums and the two-level
    member search; on the CPU, one sum per bucket and one scan; the same column for (nearly) every draw."""
    u = spread_utilities(1100, 50, 2).unsqueeze(0).expand(4000, -1).contiguous()
    u = u + torch.rand(u.shape, generator=torch.Generator().manual_seed(4)) * 1e-3  # distinct rows
    r = torch.rand((4000, 2), generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    c_dev, d_dev = cu.sample_bucketized(u.to(device), 8.0, 1.0, 50, r[:, 0], r[:, 1])
    c_cpu, d_cpu = cu.sample_bucketized(u, 8.0, 1.0, 50, r[:, 0], r[:, 1], member_block=u.shape[1])
    assert c_dev.device.type == torch.device(device).type
    assert (d_dev["bucket_size"].cpu() == d_cpu["bucket_size"]).double().mean() >= 0.999
    assert (c_dev.cpu() == c_cpu).double().mean() >= 0.999


def test_snd_release_on_the_device_equals_the_cpu(device):
    """SnD's noise comes from each record's numpy generator; the float64 sum, clip and snap on the device
    give the CPU's release (up to one grid step where float64 rounding meets a grid midpoint)."""
    x = torch.randn((6, 50, 16), generator=torch.Generator().manual_seed(0))
    out_d, _ = privatize(x.to(device), 2.0, [record_generator(9, i) for i in range(6)], bound=4.0)
    out_c, _ = privatize(x, 2.0, [record_generator(9, i) for i in range(6)], bound=4.0)
    assert out_d.device.type == torch.device(device).type
    diff = (out_d.cpu() - out_c).abs()
    assert (diff == 0).double().mean() >= 0.999 and float(diff.max()) <= 4.0 * torch.finfo(torch.float32).eps * 2

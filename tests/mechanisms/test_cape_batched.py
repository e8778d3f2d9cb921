"""Cape's batch-wide post-forward path: records share utility chunks and products yet get the results they
get alone (batching "record"), the exact two-level member search, the vectorised per-record accounting,
batched tokenization, the CUDA dtype default, and bench/sanitize_cape.py's prompt builder and eps table
(run here on CPU tensors)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ppt.mechanisms.cape import Cape, loading
from ppt.mechanisms.cape import utility as cu
from ppt.rng import record_generator
from ppt.spaces.tokenizers import HFTokenizer
from ppt.spaces.tokens import TokenBatch
from tests.mechanisms.test_cape import CORPUS, TEXTS, causal, masked  # noqa: F401 - fixtures

MANY = TEXTS + CORPUS[:6] + ["Bob paid 250 dollars in Boston on Monday.", "x", "  spaced   out  "]


def gens(seed: int, ids: list[int]) -> list[torch.Generator]:
    return [record_generator(seed, i) for i in ids]


def result(o) -> tuple:
    return o.text, json.dumps(o.accounting.__dict__, sort_keys=True, default=str), np.asarray(o.pairs).tolist()


@pytest.mark.parametrize("which", ["causal", "masked"])
def test_batched_equals_per_record(which, request):
    """batching="record": a whole batch (chunks of 64 rows that straddle records, products on fixed
    64-row blocks) gives every record exactly what it gets alone, in any order."""
    model, tok = request.getfixturevalue(which)
    probe = Cape(3.0, model=(model, tok), batching="record")
    n_cand = int(probe.candidates.numel())
    mech = Cape(3.0, model=(model, tok), batching="record", chunk_elements=64 * n_cand, logit_bound=probe.logit_bound)
    ids = list(range(len(MANY)))
    batch = mech.sanitize_batch(MANY, gens(5, ids))
    assert sum(o.accounting.n_perturbed for o in batch) > 64  # several chunks, a record cut across two
    alone = [mech.sanitize_batch([t], gens(5, [i]))[0] for i, t in zip(ids, MANY)]
    assert [result(o) for o in batch] == [result(o) for o in alone]
    rev = ids[::-1]
    backwards = mech.sanitize_batch([MANY[i] for i in rev], gens(5, rev))[::-1]
    assert [result(o) for o in backwards] == [result(o) for o in batch]
    # the draws reach their own rows: another seed changes the output
    assert [o.text for o in mech.sanitize_batch(MANY, gens(6, ids))] != [o.text for o in batch]


def test_products_run_on_fixed_row_blocks(causal):  # noqa: F811
    """Unmixed, every head / distance product has exactly GEMM_ROWS rows (the last block padded), so no
    row's rounding depends on how many rows share its product; mixed, chunks multiply at once."""
    from ppt.mechanisms.cape.mechanism import GEMM_ROWS

    shapes: list[int] = []
    for batching in ("record", "mixed"):
        mech = Cape(3.0, model=causal, batching=batching)
        head = mech.lm.candidate_logits

        def spy(x, head=head):
            shapes.append(x.shape[0])
            return head(x)

        mech.lm.candidate_logits = spy
        shapes.clear()
        out = mech.sanitize_batch(MANY, gens(2, list(range(len(MANY)))))
        n = sum(o.accounting.n_perturbed for o in out)
        if batching == "record":
            assert shapes and set(shapes) == {GEMM_ROWS} and len(shapes) == -(-n // GEMM_ROWS)
        else:
            assert shapes == [n]


def test_in_row_blocks():
    x = torch.randn(150, 7, generator=torch.Generator().manual_seed(0))
    w = torch.randn(7, 33, generator=torch.Generator().manual_seed(1))
    seen: list[int] = []

    def mm(a):
        seen.append(a.shape[0])
        return a @ w

    got = cu.in_row_blocks(mm, x, 64)
    assert seen == [64, 64, 64] and got.shape == (150, 33)
    assert torch.allclose(got, x @ w, atol=1e-5)
    for i in (0, 77, 149):  # a row alone: the same bits
        assert torch.equal(cu.in_row_blocks(mm, x[i : i + 1], 64), got[i : i + 1])
    seen.clear()
    assert torch.equal(cu.in_row_blocks(mm, x, None), x @ w) and seen == [150]
    assert cu.in_row_blocks(mm, x[:0], 64).shape == (0, 33)


def running_count_member(b: torch.Tensor, k: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
    """The reference: a running count of bucket k over the whole row."""
    running = (b == k.unsqueeze(1)).cumsum(1)
    return torch.searchsorted(running, (j + 1).unsqueeze(1)).squeeze(1)


@pytest.mark.parametrize("v", [1, 5, 1023, 1024, 1025, 3000])
@pytest.mark.parametrize("block", [1, 7, 1024])
def test_nth_member_matches_a_running_count(v, block):
    g = torch.Generator().manual_seed(v * 31 + block)
    n, nb = 40, 6
    b = torch.randint(0, nb, (n, v), generator=g)
    k = b[torch.arange(n), torch.randint(0, v, (n,), generator=g)]
    size = (b == k.unsqueeze(1)).sum(1)
    j = (torch.rand(n, generator=g) * size).floor().long()
    j[0], j[1] = 0, size[1] - 1  # the first and the last member
    blocks = -(-v // block)
    slot = b + (torch.arange(v) // block) * nb
    block_counts = (
        torch.zeros(n, blocks * nb, dtype=torch.int64).scatter_add_(1, slot, torch.ones_like(slot)).view(n, blocks, nb)
    )
    assert torch.equal(cu.nth_member(b, k, j, block_counts, block), running_count_member(b, k, j))


def test_block_sums_agree_with_bucket_sums():
    """The CUDA default (utilities summed per block, then over blocks) gives the same buckets and
    means within float rounding as the CPU's one sum per bucket."""
    u = torch.rand(20, 3000, generator=torch.Generator().manual_seed(3)) ** 2
    b1, c1, m1 = cu._bucketize(u, 50, 1024, block_sums=False)
    b2, c2, m2 = cu._bucketize(u, 50, 1024, block_sums=True)
    assert torch.equal(b1, b2) and torch.equal(c1, c2)
    assert torch.allclose(m1, m2, rtol=1e-6, atol=0)
    u[4, 2999] = float("inf")
    with pytest.raises(FloatingPointError):
        cu._bucketize(u, 50, 1024)


def test_record_accounts_match_record_by_record(bench):
    """The batched accounting against the per-record design (bench/cape_reference.py: one record at a time,
    as the accounting was first written)."""
    reference_accounts = bench.cape_reference.record_accounts
    g = torch.Generator().manual_seed(0)
    for _ in range(30):
        counts = torch.randint(0, 70, (int(torch.randint(1, 30, (1,), generator=g)),), generator=g).tolist()
        counts[0] = 0
        ep = torch.rand(sum(counts), generator=g, dtype=torch.float64) * 12
        got = cu.record_accounts(ep, counts, 3.0)
        assert json.dumps(got) == json.dumps(reference_accounts(ep, counts, 3.0))  # same bits, same key order
    assert cu.record_accounts(None, [0, 0], 3.0) == reference_accounts(None, [0, 0], 3.0)


def test_hf_tokenize_batch_equals_per_text(causal, masked):  # noqa: F811
    texts = MANY + ["", "Café naïve 東京 🙂 tab\there\n", "   ", "end "]
    for _, tok in (causal, masked):
        h = HFTokenizer(tok)
        one = TokenBatch.concat([h.tokenize(t) for t in texts])
        for _ in range(2):  # the second time from the piece memo
            both = h.tokenize_batch(texts)
            assert (both.lead, both.core, both.kinds) == (one.lead, one.core, one.kinds)
            for f in ("rows", "codes", "bounds"):
                assert (
                    np.array_equal(getattr(both, f), getattr(one, f))
                    and getattr(both, f).dtype == getattr(one, f).dtype
                )
    assert len(HFTokenizer(causal[1]).tokenize_batch([])) == 0


def test_dtype_default_bf16_on_cuda_only(causal, monkeypatch):  # noqa: F811
    """No dtype given: a context model on CUDA goes to bfloat16 (stated in params), one on the CPU keeps
    float32; a given dtype is kept as given."""
    mech = Cape(3.0, model=causal)
    assert mech.params()["dtype"] == "float32" and mech.params()["dtype_source"].startswith("default")
    assert "dtype" not in mech.signature_params()

    class OnCuda(torch.nn.Module):  # parameters that report a CUDA device, without a GPU
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.moved_to = None

        def parameters(self, recurse=True):
            yield type("P", (), {"device": torch.device("cuda")})()

        def to(self, *a, **kw):
            self.moved_to = a[0] if a else kw.get("dtype")
            return self

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **kw: True)
    m = OnCuda()
    out, source = loading.default_dtype(m, None)
    assert out.moved_to == torch.bfloat16 and "bfloat16 on CUDA" in source
    m = OnCuda()
    out, source = loading.default_dtype(m, "float32")
    assert out.moved_to is None and source == "given"
    bf = Cape(3.0, model=causal, dtype="bfloat16")
    assert bf.params()["dtype"] == "bfloat16" and bf.params()["dtype_source"] == "given"
    assert bf.signature_params()["dtype"] == "bfloat16"


# ---- bench/sanitize_cape.py ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).resolve().parents[2] / "bench" / "sanitize_cape.py"
    spec = importlib.util.spec_from_file_location("bench_sanitize_cape", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_prompts_longer_than_the_texts(bench, causal):  # noqa: F811
    """Short texts and a long --tokens: prompts are cut from the texts laid end to end (this looped
    forever when no single text reached the length)."""
    _, tok = causal
    texts = ["The doctor said the results were fine.", "Alice moved to Paris."]
    prompts = bench.load_prompts(tok, 5, 60, texts)
    assert len(prompts) == 5
    lens = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    assert all(50 <= n <= 70 for n in lens), lens
    with pytest.raises(SystemExit, match="no prompt text"):
        bench.load_prompts(tok, 2, 10, ["", "   "])
    with pytest.raises(SystemExit, match="no prompt text"):
        bench.load_prompts(tok, 2, 10, [])


def test_bench_eps_table_runs(bench, causal):  # noqa: F811
    """The eps table (which ended in a device-mismatch traceback with --device cuda) on CPU tensors:
    rows per eps, more tokens unchanged and closer replacements at large eps, state restored."""
    mech = Cape(3.0, model=causal)
    features = mech.lm.features
    rows = bench.eps_table(mech, TEXTS[:2] + [TEXTS[3]], [0.5, 200.0])
    assert [r["eps"] for r in rows] == [0.5, 200.0]
    assert all(
        0 <= r["unchanged"] <= 1 and r["dist"] >= 0 and r["eps_total"] == r["eps"] + r["eps_prime"] for r in rows
    )
    assert rows[1]["unchanged"] > rows[0]["unchanged"] and rows[1]["dist"] < rows[0]["dist"]
    assert mech.eps == 3.0 and mech.lm.features == features


def test_sampler_same_columns_with_block_search():
    """The CUDA default (two-level member search over 1024-column blocks) picks the same columns as the
    CPU's one scan per row, run here on CPU tensors."""
    g = torch.Generator().manual_seed(4)
    u = torch.rand(30, 5000, generator=g) ** 3
    u[0] = 0.25  # one bucket holds the whole row
    r = torch.rand(30, 2, generator=g, dtype=torch.float64)
    cols, diag = cu.sample_bucketized(u, 3.0, 1.0, 50, r[:, 0], r[:, 1])
    for block in (7, 1024):
        c2, d2 = cu.sample_bucketized(u, 3.0, 1.0, 50, r[:, 0], r[:, 1], member_block=block)
        assert torch.equal(cols, c2) and all(torch.equal(diag[k], d2[k]) for k in diag)

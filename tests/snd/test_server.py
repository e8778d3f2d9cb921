"""The server half over loopback HTTP: it receives only privatized rows, answers what the in-process
half answers, and keeps the `ppt serve` rules (bearer token, bounded bodies)."""

from __future__ import annotations

import httpx
import pytest
import torch

from ppt.io import PptError
from ppt.remote.snd import SndClient, SndService, start_snd_server
from ppt.rng import record_generator
from ppt.snd.pipeline import snd_embed
from ppt.snd.split import SplitModel
from tests.snd.conftest import CORPUS


@pytest.fixture(scope="module")
def split(tiny_encoder):
    return SplitModel.load(str(tiny_encoder), device="cpu")


@pytest.fixture
def recording_server(split):
    got: list[list[torch.Tensor]] = []
    server, _ = start_snd_server(SndService(split, on_request=lambda rows: got.append([r.clone() for r in rows])))
    yield server, got
    server.shutdown()
    server.server_close()


def test_server_never_receives_a_clean_embedding(split, recording_server):
    server, got = recording_server
    client = SndClient(server.base_url)
    texts = CORPUS[:6]
    gens = [record_generator(5, i) for i in range(len(texts))]
    remote = snd_embed(split, texts, 50.0, gens, pool=client)
    received = [r for batch in got for r in batch]
    assert len(received) == len(texts)
    table = split.table
    clean = split.client_rows(texts).rows
    for r, c, sent in zip(received, clean, remote.noisy_rows, strict=True):
        assert torch.allclose(r, sent)  # exactly what the client privatized ...
        assert (r - c).norm(dim=1).min() > 1e-3  # ... and no row is its clean token embedding
        assert torch.cdist(r, table).min() > 1e-3  # nor any vocabulary row at all
        assert (r.norm(dim=1) <= split.bound * (1 + 1e-5)).all()  # clipped
    # the same seeds in-process give the same answer: the HTTP half is the same computation
    local = snd_embed(split, texts, 50.0, [record_generator(5, i) for i in range(len(texts))])
    assert torch.allclose(local.noisy, remote.noisy, atol=1e-5)
    client.close()


def test_bearer_token_and_malformed_requests(split):
    server, _ = start_snd_server(SndService(split), api_key="s3cret")
    try:
        with pytest.raises(PptError, match="401"):
            SndClient(server.base_url, api_key="wrong").info()
        ok = SndClient(server.base_url, api_key="s3cret")
        assert ok.info()["model_hash"] == split.hash
        auth = {"Authorization": "Bearer s3cret"}
        url = server.base_url + "/v1/snd/embed"
        assert httpx.get(server.base_url + "/health").status_code == 200
        r = httpx.post(url, content=b"not json", headers=auth)
        assert r.status_code == 400 and "not JSON" in r.text
        bad_dim = {"inputs": [{"shape": [2, split.dim + 1], "data": ""}]}
        assert httpx.post(url, json=bad_dim, headers=auth).status_code == 400
        assert httpx.post(url, json={"text": "hello"}, headers=auth).status_code == 400
        ok.close()
    finally:
        server.shutdown()
        server.server_close()


def test_huge_finite_rows_get_400_not_nan(split):
    """P-m7 (issue 29): finite but huge rows (3e38) made the model's output NaN, answered 200."""
    from ppt.remote.snd import WireError, encode

    service = SndService(split)
    huge = torch.full((3, split.dim), 3e38)
    body = __import__("orjson").dumps({"inputs": [encode(huge)]})
    with pytest.raises(WireError, match="not finite"):
        service.embed(body)
    fine = torch.zeros(3, split.dim)
    assert service.embed(__import__("orjson").dumps({"inputs": [encode(fine)]}))["embeddings"]

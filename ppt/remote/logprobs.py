"""Per-token log-probabilities of a generated text (the ``logprobs`` the DP-OPT evaluation reads over
HTTP): one forward pass, computed by the model worker that generated the text."""

from __future__ import annotations

from typing import Any


def token_logprobs(generator: Any, prompt: Any, text: str, k: int) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """Per-token log-probabilities of ``text`` after ``prompt`` under the model (temperature 1), with the
    top ``k`` alternatives at each position: one forward pass over the prompt and the text as the
    tokenizer splits it (the tokens' strings join to the text)."""
    import torch

    tok, model = generator.tokenizer, generator.model
    rendered, special = generator.render(prompt)
    p_ids = list(tok(rendered, add_special_tokens=special)["input_ids"])
    c_ids = list(tok(text, add_special_tokens=False)["input_ids"]) if text else []
    limit = getattr(generator, "context_length", None)
    if limit:
        c_ids = c_ids[: max(0, limit - len(p_ids))]
    if not c_ids or not p_ids:
        return []
    with torch.inference_mode():
        ids = torch.tensor([p_ids + c_ids], device=generator.device)
        logits = model(input_ids=ids).logits[0, len(p_ids) - 1 : len(p_ids) + len(c_ids) - 1].float()
        lp = torch.log_softmax(logits, dim=-1)
        chosen = lp.gather(1, torch.tensor(c_ids, device=lp.device)[:, None])[:, 0].tolist()
        top = lp.topk(k, dim=-1) if k > 0 else None
        top_vals = top.values.tolist() if top is not None else [[] for _ in c_ids]
        top_ids = top.indices.tolist() if top is not None else [[] for _ in c_ids]
    pieces = _token_strings(tok, c_ids)
    return [
        (pieces[j], float(chosen[j]), [(tok.decode([t]), float(v)) for t, v in zip(top_ids[j], top_vals[j])])
        for j in range(len(c_ids))
    ]


def _token_strings(tok: Any, ids: list[int]) -> list[str]:
    """Each token's share of the decoded text (so the pieces join to it; a byte split across tokens
    shows up in the token that completes it)."""
    out, prev = [], ""
    for j in range(len(ids)):
        cur = tok.decode(ids[: j + 1])
        if cur.startswith(prev) and not cur.endswith("\ufffd"):
            out.append(cur[len(prev) :])
            prev = cur
        else:
            out.append("")
    if out and prev != tok.decode(ids):
        out[-1] += tok.decode(ids)[len(prev) :]
    return out

"""The DP-OPT algorithm: private generation of candidate instructions, then private selection.

Generation, per candidate c: the generation split is partitioned by a keyed hash (salted with c) into
``ensemble`` disjoint subsets of at most ``shots`` records; each subset's meta-prompt is the backward
template over the subset's successes and errors under the initial instruction. Per token, each subset votes
with probability ``rate`` (its next token sampled at ``temperature``), the vote histogram goes through
LimitedDomain, and the released token is appended to every meta-prompt. Bottom: ``retries`` retries with
fresh participation and votes (default 0: the candidate ends at its first bottom; the paper's text retries
once); one more bottom ends the candidate. The accountant is consulted before every query; the run stops (keeping
what was released) when the next query would exceed the budget.

Only what a query reads is computed (ppt.dpopt.ensemble.LazyEnsemble): a subset's meta-prompt is encoded,
and its demonstrations classified, when it first votes; the meta-prompts' shared prefix is encoded once; the
KV caches are kept across tokens. The participation mask is drawn before, so the mechanism is unchanged.

Selection: the initial instruction and the non-empty candidates are scored on the validation split (a
disjoint keyed-hash split, so the two steps compose in parallel) and one is chosen by report-noisy-max.

``eps = inf`` runs the same code with no noise, every subset voting, and no budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppt.dpopt import checkpoint as ckpt
from ppt.dpopt import templates
from ppt.dpopt.accountant import Accountant
from ppt.dpopt.config import DEFAULT_DELTA, PRESETS, TuneConfig
from ppt.dpopt.subsets import assign, make_key, split
from ppt.io import ExitCode, PptError

__all__ = ["DEFAULT_DELTA", "MIN_VALIDATION", "PRESETS", "Plan", "TuneConfig", "prepare", "tune"]

MIN_VALIDATION = 1


@dataclass
class Plan:
    """A validated run, before any model is loaded: resolved options, accountant, subset key, saved state."""

    cfg: TuneConfig
    acct: Accountant
    key: bytes
    state: dict[str, Any]
    signature: dict[str, Any]

    @property
    def budget_queries(self) -> int:
        """The LimitedDomain queries the budget covers (at eps = inf: every query the run may make)."""
        return self.acct.max_queries() if self.cfg.private else self.cfg.max_queries()


def prepare(
    cfg: TuneConfig, texts: list[str], labels: list[str], *, checkpoint: str | None = None, model_name: str = ""
) -> Plan:
    """Every check that needs no model (bad labels, too few records, a budget below one token) and the
    checkpoint, if one is there: its accountant replaces a fresh one, so nothing is spent twice."""
    if len(cfg.labels) < 2 or len(set(cfg.labels)) != len(cfg.labels) or any(not y.strip() for y in cfg.labels):
        raise PptError(
            "--labels needs at least two distinct, non-empty labels",
            ExitCode.USAGE,
            hint="e.g. --labels 'negative,positive'",
        )
    known = set(cfg.labels)
    bad = [i for i, y in enumerate(labels) if y not in known]
    if bad:
        raise PptError(
            f"{len(bad)} record(s) have a label outside --labels (first at record {bad[0] + 1})",
            ExitCode.DATAERR,
            hint="list every label value in --labels, or filter the input",
        )
    for name, v, lo in (
        ("--ensemble", cfg.ensemble, 1),
        ("--shots", cfg.shots, 1),
        ("--max-prompts", cfg.max_prompts, 1),
        ("--max-tokens", cfg.max_tokens, 1),
        ("--k-bar", cfg.k_bar, 1),
        ("--retries", cfg.retries, 0),
    ):
        if v < lo:
            raise PptError(f"{name} must be >= {lo}", ExitCode.USAGE)
    if (
        not (cfg.eps > 0)
        or (cfg.delta is not None and not 0 < cfg.delta < 1)
        or not 0 < cfg.rate <= 1
        or not cfg.eps0 > 0
        or (cfg.delta0 is not None and not 0 < cfg.delta0 < 1)
        or not 0 < cfg.val_fraction < 1
        or cfg.temperature < 0
    ):
        raise PptError(
            "need eps > 0, 0 < delta < 1, 0 < rate <= 1, eps0 > 0, 0 < delta0 < 1, 0 < val-fraction < 1, "
            "temperature >= 0",
            ExitCode.USAGE,
        )
    r = cfg.resolved(len(texts))
    acct = r.accountant_for()  # the budget's figures need no data: checked before the records are
    if r.private and acct.max_queries() == 0:
        raise PptError(
            f"budget eps={r.eps:g} delta={r.delta:g} cannot cover one token at eps0={r.eps0:g}, rate={r.rate:g}",
            ExitCode.USAGE,
            hint="raise --eps, or lower --eps0 or --rate",
        )
    signature = {
        k: (str(v) if isinstance(v, float) and math.isinf(v) else v) for k, v in asdict(r).items() if k != "seed"
    } | {"n": len(texts), "model": model_name, "input": _digest(texts, labels)}
    state = ckpt.load(checkpoint)
    if state is not None and state.get("signature") != signature:
        raise PptError(
            "the checkpoint belongs to another run (options, input or model differ)",
            ExitCode.USAGE,
            hint="use a new --checkpoint directory, or the same options and input",
        )
    key = bytes.fromhex(state["key"]) if state is not None else make_key(r.seed)
    gen, val = split(key, texts, labels, r.val_fraction)
    need = r.ensemble + MIN_VALIDATION
    if len(gen) < r.ensemble or len(val) < MIN_VALIDATION:
        raise PptError(
            f"{len(texts)} records are too few for an ensemble of {r.ensemble} subsets plus a validation split",
            ExitCode.DATAERR,
            hint=f"give at least ~{int(need / (1 - r.val_fraction)) + 1} records, or lower --ensemble",
        )
    if state is not None:
        try:
            acct = Accountant.from_state(state["accountant"])
        except (KeyError, TypeError, ValueError):
            raise ckpt.damaged(Path(checkpoint) / ckpt.NAME, "its accountant is not one") from None
    else:
        state = {
            "signature": signature,
            "key": key.hex(),
            "candidates": [],
            "current": None,
            "generation_done": False,
            "budget_stop": False,
        }
    return Plan(r, acct, key, state, signature)


def _digest(texts: list[str], labels: list[str]) -> str:
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for t, y in zip(texts, labels):
        h.update(f"{y}\x1f{t}\x1e".encode())
    return h.hexdigest()


class _MetaPrompts:
    """The subsets' meta-prompts (backward template: each demonstration's success or error under the initial
    instruction), built only for the subsets asked for. A record is classified once per run: the same record
    in another candidate's subset is not scored again."""

    def __init__(self, model, tok, cfg: TuneConfig, texts: list[str], labels: list[str]):
        self.model, self.tok, self.cfg, self.texts, self.labels = model, tok, cfg, texts, labels
        self.pred: dict[int, str] = {}
        self.classified = 0

    def prefix(self) -> list[int]:
        """Token ids every meta-prompt of this run starts with (the task and the initial instruction): the
        common prefix of data-free meta-prompts with each way a subset's part can begin."""
        from ppt.dpopt.ensemble import common_prefix

        init = self.cfg.init
        variants = [templates.backward(init, [], [], message=m) for m in range(len(templates.MESSAGES))]
        variants += [templates.backward(init, [("x", "y")], [], 0), templates.backward(init, [], [("x", "y", "z")], 0)]
        return common_prefix([self.tok(v, add_special_tokens=True)["input_ids"] for v in variants])

    def ids(self, subsets: list[list[int]], rows: list[int]) -> list[list[int]]:
        from ppt.dpopt.evaluate import label_logprobs

        need = sorted({i for r in rows for i in subsets[r]} - self.pred.keys())
        if need:
            # each record alone: its label (successes or errors) must not depend on which other records are
            # classified with it, or one record could change a second subset's meta-prompt (issue 37 a)
            texts = [self.texts[i] for i in need]
            lp = label_logprobs(self.model, self.tok, self.cfg.init, texts, self.cfg.labels, alone=True)
            self.pred.update({i: self.cfg.labels[int(j)] for i, j in zip(need, lp.argmax(1))})
            self.classified += len(need)
        out = []
        for r in rows:
            s, texts, labels, pred = subsets[r], self.texts, self.labels, self.pred
            ok = [(texts[i], labels[i]) for i in s if pred[i] == labels[i]]
            bad = [(texts[i], pred[i], labels[i]) for i in s if pred[i] != labels[i]]
            prompt = templates.backward(self.cfg.init, ok, bad, message=r)
            out.append(self.tok(prompt, add_special_tokens=True)["input_ids"])
        return out


def _stops(tok, token: int, eos: set[int], so_far: list[int]) -> bool:
    """End of a candidate: an end-of-sequence token, or a line break once some text was released (the
    instruction is one quoted line; a leading line break is kept as layout, never ends it empty)."""
    if token in eos:
        return True
    return "\n" in tok.decode([token]) and bool(tok.decode(so_far, skip_special_tokens=True).strip())


def tune(
    model,
    tok,
    plan: Plan,
    texts: list[str],
    labels: list[str],
    *,
    checkpoint: str | None = None,
    progress: Callable[[dict], None] | None = None,
    model_name: str = "",
) -> dict[str, Any]:
    """Run DP-OPT on (texts, labels) as ``plan`` (from :func:`prepare`) says; returns the result object
    (instruction, candidates, stamp block). ``checkpoint``: the directory the state is saved to."""
    import torch

    from ppt.dpopt import limited_domain
    from ppt.dpopt.ensemble import LazyEnsemble, sample_votes
    from ppt.dpopt.evaluate import label_logprobs
    from ppt.dpopt.selection import select
    from ppt.dpopt.subsets import participation
    from ppt.lm.base import eos_ids
    from ppt.rng import record_generator

    cfg, acct, key, state = plan.cfg, plan.acct, plan.key, plan.state
    if state.get("result") is not None:  # a finished run: its recorded result, never a second selection
        return {**state["result"], "resumed_finished": True}
    gen, val = split(key, texts, labels, cfg.val_fraction)
    gtexts, glabels = [texts[i] for i in gen], [labels[i] for i in gen]
    eos = set(eos_ids(model, tok))
    meta = _MetaPrompts(model, tok, cfg, gtexts, glabels)
    prefix = meta.prefix()

    def save() -> None:
        state["accountant"] = acct.state()
        if checkpoint is not None:
            ckpt.save(checkpoint, state)

    def released_so_far() -> int:
        return sum(c["tokens"] for c in state["candidates"]) + len((state["current"] or {}).get("tokens", []))

    def say(event: str, **kw) -> None:
        if progress is not None:
            progress(
                {
                    "event": event,
                    "queries": acct.queries,
                    "failures": acct.failures,
                    "eps_spent": acct.epsilon(),
                    "budget": plan.budget_queries,
                    "released": released_so_far(),
                    **kw,
                }
            )

    say("start", candidate=len(state["candidates"]), tokens=0)
    p = len(state["candidates"])
    while not state["generation_done"] and p < cfg.max_prompts:
        if not acct.allow():  # not even one query left: build no meta-prompts
            state["budget_stop"] = True
            break
        cur = (
            state["current"] if state["current"] is not None and state["current"]["p"] == p else {"p": p, "tokens": []}
        )
        state["current"] = cur
        subsets = assign(key, gtexts, glabels, cfg.ensemble, cfg.shots, salt=str(p))
        ens = LazyEnsemble(
            model, tok, cfg.ensemble, lambda rows, s=subsets: meta.ids(s, rows), prefix=prefix, tokens=cur["tokens"]
        )
        stop = None
        while len(cur["tokens"]) < cfg.max_tokens:
            released = None
            for attempt in range(1 + cfg.retries):
                if not acct.allow():
                    stop = "budget"
                    break
                acct.spend(failed=False)  # paid before the draw; saved before anything is released
                save()
                g = record_generator(cfg.seed, "dp-opt", f"gen:{p}:{len(cur['tokens'])}:{attempt}")
                mask = participation(cfg.ensemble, cfg.rate, g)
                votes = sample_votes(ens.logits(mask), cfg.temperature, g)  # the participating subsets only
                hist = torch.bincount(votes, minlength=ens.vocab)
                released = limited_domain.release(hist, cfg.eps0, acct.delta0, cfg.k_bar, g)
                if released is not None:
                    break
                acct.failures += 1
                save()
                say("bottom", candidate=p, tokens=len(cur["tokens"]))
            if stop or released is None:
                stop = stop or "bottom"
                break
            if _stops(tok, released, eos, cur["tokens"]):
                stop = "end"
                say("end", candidate=p, tokens=len(cur["tokens"]))
                break
            cur["tokens"].append(int(released))
            save()
            say("token", candidate=p, tokens=len(cur["tokens"]))
            ens.append(released)
        text = tok.decode(cur["tokens"], skip_special_tokens=True).strip()
        state["candidates"].append({"text": text, "tokens": len(cur["tokens"]), "stop": stop or "max_tokens"})
        state["current"] = None
        say("candidate", candidate=p, tokens=len(cur["tokens"]), stop=stop or "max_tokens", text_empty=not text)
        p += 1
        if stop == "budget":
            state["budget_stop"] = True
            break
    state["generation_done"] = True
    save()

    # selection on the validation split
    pool = [cfg.init] + [c["text"] for c in state["candidates"] if c["text"]]
    pool = list(dict.fromkeys(pool))
    vtexts, vgold = [texts[i] for i in val], np.array([cfg.labels.index(labels[i]) for i in val])
    correct = []
    if len(pool) > 1:  # one candidate: the choice is forced and the validation split is not read
        for inst in pool:
            lp = label_logprobs(model, tok, inst, vtexts, cfg.labels, alone=True)  # counts of sensitivity 1
            correct.append(int((lp.argmax(1) == vgold).sum()))
        chosen = select(torch.tensor(correct), cfg.eps_select, record_generator(cfg.seed, "dp-opt", "select"))
    else:
        chosen, correct = 0, [None]
    eps_gen = acct.epsilon()
    released_scores = None if cfg.private else correct
    # The headline is the guarantee: the budget the run was allowed. When generation stops (bottoms, ends,
    # max_tokens) depends on the data, so the spend at the stop is not a guarantee on its own (issue 37, row 5).
    block = {
        "eps": max(cfg.eps, cfg.eps_select) if cfg.private else "inf",
        "delta": cfg.delta,
        "realised_eps": max(eps_gen, cfg.eps_select) if cfg.private else "inf",
        "realised_eps_note": "spent before the stop; not a guarantee on its own (the stopping time depends on the "
        "data): the guarantee is eps, the budget",
        "budget": {"eps": cfg.eps if cfg.private else "inf", "delta": cfg.delta},
        "generation": {
            "eps": eps_gen if cfg.private else "inf",
            "accountant": f"{cfg.accountant} (dp-accounting): randomized response at ln(1 + q(e^eps0 - 1)), "
            "the proven dominating pair of one query, both directions"
            if cfg.accountant == "pld"
            else "rdp (dp-accounting via ppt.accounting events)",
            "amplification": f"Poisson subset participation, rate {cfg.rate:g} per query (advanced joint convexity)",
            "queries": acct.queries,
            "budget_queries": plan.budget_queries,
            "failures": acct.failures,
            "eps0": cfg.eps0 if cfg.private else "inf",
            "delta0": acct.delta0,
            "delta_limited_domain": acct.queries * cfg.rate * acct.delta0,
            "k_bar": cfg.k_bar,
            "retries": cfg.retries,
            "noise": "Gumbel(2/eps0): vote histograms are not monotone",
            "ensemble": cfg.ensemble,
            "shots": cfg.shots,
            "temperature": cfg.temperature,
            "subsets": "keyed hash of each record",
            "stopped": "budget" if state["budget_stop"] else "done",
            "events": acct.events().to_dict() if cfg.private else None,
        },
        "selection": {
            "eps": cfg.eps_select if cfg.private else "inf",
            "mechanism": "report-noisy-max, Gumbel(1/eps), monotone correct-counts",
            "split": f"keyed-hash validation split ({cfg.val_fraction:g}), disjoint: parallel composition "
            "under add/remove; under substitution generation and selection eps add",
            "released": "chosen index only" if cfg.private else "exact counts (eps = inf)",
        },
        "private": cfg.private,
        "seeded": cfg.seed is not None,
        "model": model_name,
    }
    result = {
        "instruction": pool[chosen],
        "init": cfg.init,
        "labels": list(cfg.labels),
        "template": templates.FORWARD,
        "candidates": pool,
        "chosen": chosen,
        "validation_correct": released_scores,
        "validation_n": len(val) if not cfg.private else None,
        "block": block,
    }
    state["result"] = result  # the selection's release is recorded: a rerun returns it, never selects again
    save()
    return result

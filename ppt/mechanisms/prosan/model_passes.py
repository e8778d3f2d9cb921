"""The model half of ProSan: its candidate vocabulary and the passes of its language models.

Apart from the mechanism's wiring because it is where the LMs run: the masked LM's whole-word candidates,
K/O/H scores from the causal LM (:mod:`.scores`), and the masked-LM replacement of the protected words
(:mod:`.replace`). A mixin of :class:`ppt.mechanisms.prosan.mechanism.ProSan`, whose ``prepare()`` loads
the models these methods use.
"""

from __future__ import annotations

import numpy as np
import torch

from ppt.mechanisms.prosan import scores as sc
from ppt.mechanisms.prosan.plan import ProsanBatch
from ppt.mechanisms.prosan.replace import candidate_sets, replacement_probs, sample_columns


class ModelPasses:
    """ProSan's candidates, scores and replacements (the models are loaded by ``prepare()``)."""

    def _build_candidates(self) -> None:
        tok = self.mlm_tok
        n = min(len(tok), self.mlm.get_input_embeddings().weight.shape[0])
        specials = set(tok.all_special_ids)
        texts = tok.convert_ids_to_tokens(list(range(n)))
        keep = [
            i
            for i, t in enumerate(texts)
            if i not in specials and t and t.isalpha() and len(t) >= 2 and not t.startswith("##")
        ]
        self._candidates = torch.as_tensor(keep, dtype=torch.long)
        self._cand_text = [texts[i] for i in keep]
        self.id_text = np.asarray(texts, dtype=object)
        self.cand_fold: dict[str, list[int]] = {}
        for col, t in enumerate(self._cand_text):
            self.cand_fold.setdefault(t.casefold(), []).append(col)
        self.vocab = tok.get_vocab()
        self.lowercase = bool(getattr(tok, "do_lower_case", False)) or bool(
            tok("A", add_special_tokens=False)["input_ids"] == tok("a", add_special_tokens=False)["input_ids"]
        )
        emb = self.mlm.get_input_embeddings().weight.detach().float()
        self.mlm_emb = torch.nn.functional.normalize(emb, dim=1)
        self.max_mlm_len = int(getattr(self.mlm.config, "max_position_embeddings", 512) or 512)

    @property
    def candidates(self) -> torch.Tensor:
        self.prepare()
        return self._candidates

    @property
    def cand_text(self) -> list[str]:
        self.prepare()
        return self._cand_text

    def _vocab_id(self, word: str) -> int:
        """The masked LM's id of a whole word (-1 when it is not one token of its vocabulary)."""
        if not word:
            return -1
        return int(self.vocab.get(word.lower() if self.lowercase else word, -1))

    def score(
        self,
        texts: list[str],
        leads: list[list[str]],
        cores: list[list[str]],
        is_word: list[np.ndarray],
        reproducible: bool,
    ) -> list[sc.WordScores]:
        """K, O and H of every text (one record at a time when ``reproducible``)."""
        enc = self.lm_tok(texts, add_special_tokens=False, return_offsets_mapping=True)
        prompts, words, n_words = [], [], []
        room = max(1, self.max_tokens - len(self.prefix))
        for i in range(len(texts)):
            cmap, _ = sc.char_word_map(leads[i], cores[i], is_word[i])
            ids = enc["input_ids"][i][:room]
            offs = [tuple(x) for x in enc["offset_mapping"][i][:room]]
            prompts.append(self.prefix + list(ids))
            words.append(np.concatenate([np.full(len(self.prefix), -1, np.int64), sc.token_words(offs, cmap)]))
            n_words.append(int(is_word[i].sum()))
        out: list[sc.WordScores | None] = [None] * len(texts)
        cache = self.score_cache
        if cache is not None:
            for i, t in enumerate(texts):
                out[i] = cache.get((t, reproducible))
        step = 1 if reproducible else self.batch_size
        todo = [i for i in range(len(texts)) if out[i] is None]
        order = todo if reproducible else sorted(todo, key=lambda i: len(prompts[i]))
        for s in range(0, len(order), step):
            grp = order[s : s + step]
            live = [i for i in grp if len(prompts[i]) > len(self.prefix) and n_words[i]]
            for i in grp:
                if i not in live:
                    out[i] = sc.WordScores(np.zeros(n_words[i]), np.zeros(n_words[i]), np.zeros(n_words[i]), 0.0)
            if not live:
                continue
            res, _ = sc.respond_and_score(
                self.lm,
                [prompts[i] for i in live],
                [words[i] for i in live],
                [n_words[i] for i in live],
                len(self.prefix),
                self.response_tokens,
                self.lm_pad,
                self.lm_eos,
            )
            for i, r in zip(live, res):
                out[i] = r
        if cache is not None:
            for i, t in enumerate(texts):
                cache[(t, reproducible)] = out[i]
        return out  # type: ignore[return-value]

    def _masked_ids(self, text: str, start: int, end: int) -> tuple[list[int], int]:
        tok = self.mlm_tok
        ids = tok(text[:start] + tok.mask_token + text[end:])["input_ids"]
        m = ids.index(tok.mask_token_id)
        L = self.max_mlm_len
        if len(ids) > L:  # a window around the mask, [CLS] and [SEP] kept
            lo = max(1, min(m - (L - 2) // 2, len(ids) - 1 - (L - 2)))
            ids = [ids[0]] + ids[lo : lo + L - 2] + [ids[-1]]
            m = m - lo + 1
        return ids, m

    def perturb(self, tb: ProsanBatch, positions: np.ndarray, u: torch.Tensor, reproducible: bool = True):
        """New masked-LM ids for the pieces at ``positions`` (batch order) and per-position diagnostics."""
        from ppt.lm.base import gathered_logits, right_pad

        rec = np.searchsorted(tb.bounds, positions, side="right") - 1
        copies, at = [], []
        for p, r in zip(positions.tolist(), rec.tolist()):
            s = int(tb.starts[p])
            ids, m = self._masked_ids(tb.texts[r], s, s + len(tb.core[p]))
            copies.append(ids)
            at.append(m)
        dev = self.mlm_emb.device
        cand = self._candidates.to(dev)
        groups: list[list[int]] = []
        if reproducible:
            for r in np.unique(rec).tolist():
                groups.append(np.flatnonzero(rec == r).tolist())
        else:
            groups = [list(range(s, min(s + 32, len(copies)))) for s in range(0, len(copies), 32)]
        probs = torch.empty((len(copies), cand.numel()), device=dev)
        pad = self.mlm_tok.pad_token_id or 0
        with torch.inference_mode():
            for g in groups:
                ids, attn = right_pad([copies[j] for j in g], pad)
                rows = torch.arange(len(g))
                cols = torch.as_tensor([at[j] for j in g])
                logits = gathered_logits(self.mlm, ids.to(dev), attn.to(dev), rows.to(dev), cols.to(dev)).float()
                probs[g] = torch.softmax(logits[:, cand], dim=1)
        words = [tb.core[p] for p in positions.tolist()]
        if self.exclude_original:
            for j, w in enumerate(words):
                for col in self.cand_fold.get(w.casefold(), ()):
                    probs[j, col] = 0.0
            total = probs.sum(1, keepdim=True)
            probs = torch.where(total > 0, probs / total.clamp_min(1e-30), torch.full_like(probs, 1.0 / probs.shape[1]))
        cols, mask = candidate_sets(probs, self.tau, self.max_candidates)
        sims = self.similarities(words, cols)
        k = torch.as_tensor(tb.k[positions], dtype=torch.float64)
        o = torch.as_tensor(tb.o[positions], dtype=torch.float64)
        P = replacement_probs(k, o, sims.double().cpu(), mask.cpu(), self.scale)
        pick = sample_columns(P, u.cpu())
        chosen = cols.cpu()[torch.arange(len(pick)), pick]
        new_ids = self._candidates[chosen].numpy().astype(np.int64)
        return new_ids, {"n_candidates": mask.sum(1).cpu()}

    def similarities(self, words: list[str], cols: torch.Tensor) -> torch.Tensor:
        """s_c [n, C] of each word to its candidate columns."""
        if self.similarity_fn is not None:
            ctext = self._cand_text
            return torch.as_tensor(
                [self.similarity_fn(w, [ctext[c] for c in row]) for w, row in zip(words, cols.cpu().tolist())],
                dtype=torch.float64,
            )
        vecs = []
        for w in words:
            ids = self.mlm_tok(w, add_special_tokens=False)["input_ids"] or [self.mlm_tok.unk_token_id or 0]
            vecs.append(self.mlm_emb[torch.as_tensor(ids, device=self.mlm_emb.device)].mean(0))
        v = torch.nn.functional.normalize(torch.stack(vecs), dim=1)
        c = self.mlm_emb[self._candidates.to(self.mlm_emb.device)[cols]]  # [n, C, d]
        return torch.einsum("nd,ncd->nc", v, c).clamp(0.0, 1.0).double()


__all__ = ["ModelPasses"]

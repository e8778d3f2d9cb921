"""Zero-shot classification by label-word log-probability with a local causal LM (Cape Sec. 5.1.1,
DP-OPT's forward template).

For each record and each label word w, score log P(" w" | prompt) (summed over w's tokens, or averaged
with ``length_norm``); the prediction is the best-scoring label. The prompt is a template with
``{text}`` (and optionally ``{labels}``, the comma-separated label words).
"""

from __future__ import annotations

from ppt.lm.base import pad_id
from ppt.lm.score import continuation_logprobs

DEFAULT_TEMPLATE = "{text}\n\nQuestion: which of these topics is the text above about: {labels}?\nAnswer:"


class ZeroShotClassifier:
    def __init__(
        self,
        model,
        tokenizer,
        labels: list[str],
        template: str = DEFAULT_TEMPLATE,
        length_norm: bool = False,
        batch_size: int = 16,
    ):
        if "{text}" not in template:
            raise ValueError("the template must contain {text}")
        labels = [str(x) for x in labels]
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ValueError("give at least two distinct labels")
        self.model, self.tok, self.labels, self.template = model, tokenizer, labels, template
        self.length_norm, self.batch_size = length_norm, batch_size
        self.label_ids = [tokenizer(" " + w.strip(), add_special_tokens=False)["input_ids"] for w in labels]
        if any(not ids for ids in self.label_ids):
            raise ValueError("a label word encodes to no tokens")
        self.pad_id = pad_id(tokenizer)

    def prompt(self, text: str) -> str:
        return self.template.replace("{labels}", ", ".join(self.labels)).replace("{text}", text)

    def predict(self, texts: list[str]) -> list[tuple[str, list[float]]]:
        """(predicted label, score per label) for each text."""
        prompts = [self.tok(self.prompt(t), add_special_tokens=True)["input_ids"] for t in texts]
        pairs = [(p, ids) for p in prompts for ids in self.label_ids]
        scored = continuation_logprobs(self.model, pairs, pad_id=self.pad_id, batch_size=self.batch_size)
        out, k = [], len(self.labels)
        for i in range(len(texts)):
            row = scored[i * k : (i + 1) * k]
            scores = [lp / n if (self.length_norm and n) else lp for lp, n in row]
            best = max(range(k), key=lambda j: scores[j])
            out.append((self.labels[best], scores))
        return out

"""The models and spaces every cell of ``ppt eval pipeline`` shares, each loaded on first use.

Apart from the driver because it is the experiment's one contact with models: the remote backend (an
OpenAI-compatible endpoint or a local model in-process), the query spec, the extractor, and the
mechanisms as the sweep builds them. Tests replace its methods with fakes.
"""

from __future__ import annotations

from typing import Any

from ppt.experiments.pipeline_cells import PipelineConfig


class Context:
    """Models and spaces shared by every cell, loaded on first use (tests inject fakes)."""

    def __init__(self, cfg: PipelineConfig):
        from ppt.experiments.sweep import SweepConfig, _Shared

        self.cfg = cfg
        self.sweep = _Shared(
            SweepConfig(ks=cfg.ks, device=self._device(), cape_model=cfg.cape_model, encoder=cfg.encoder)
        )
        self._backend = None
        self._extractor = None
        self._spec = None
        self._mechs: dict = {}

    def _device(self) -> str:
        from ppt.models.device import resolve_device

        return str(resolve_device(self.cfg.device))

    @property
    def encoder(self):
        return self.sweep.encoder

    @property
    def backend(self):
        if self._backend is None:
            cfg = self.cfg
            if cfg.remote:
                from ppt.remote.auth import check_base_url, resolve_api_key
                from ppt.remote.client import HttpBackend

                url = check_base_url(cfg.remote)
                self._backend = HttpBackend(url, api_key=resolve_api_key(cfg.api_key_env, url, required=False))
            else:
                from ppt.lm.door import get_lm
                from ppt.remote.backends import LocalQueryBackend

                gen = get_lm(cfg.remote_model, device=self._device(), batch_size=cfg.batch_size)
                self._backend = LocalQueryBackend(gen, seed=cfg.seed)
        return self._backend

    @property
    def spec(self):
        if self._spec is None:
            from ppt.lm.templates import QUERY_TEMPLATE, Template
            from ppt.stages.query import QuerySpec

            cfg = self.cfg
            self._spec = QuerySpec(
                model=cfg.remote_model,
                template=Template.parse(QUERY_TEMPLATE, "paper-continuation"),
                endpoint=cfg.remote_endpoint,
                temperature=cfg.temperature,
                max_tokens=cfg.max_new_tokens,
            )
        return self._spec

    @property
    def extractor(self):
        if self._extractor is None:
            from ppt.lm.base import SamplingParams
            from ppt.lm.door import get_lm
            from ppt.stages.extract import Extractor

            cfg = self.cfg
            gen = get_lm(cfg.extract_model, device=self._device(), batch_size=cfg.batch_size)
            self._extractor = Extractor(
                gen,
                raw_field="raw",
                generation_field="generation",
                seed=cfg.seed,
                params=SamplingParams(max_new_tokens=cfg.max_new_tokens, temperature=cfg.extract_temperature),
            )
        return self._extractor

    def remote(self, ids: list[Any], texts: list[str], stream: str) -> list[str | None]:
        """The remote continuation of each text (None where the request failed). ``stream`` separates
        independent samples of the same document (the local backend seeds from (seed, key))."""
        from ppt.io import RecordError

        spec = self.spec
        items = [(f"{stream}:{i}", spec.body(spec.template.render({"text": t}))) for i, t in zip(ids, texts)]
        res = self.backend.run(items, spec.endpoint)
        return [None if isinstance(r, RecordError) else r.text.strip() for r in res]

    def extract(self, ids: list[Any], raws: list[str], gens: list[str]) -> list[str | None]:
        from ppt.io import Record, RecordError

        recs = [
            Record(line_no=j, id=i, data={"id": i, "raw": r, "generation": g}, text=None)
            for j, (i, r, g) in enumerate(zip(ids, raws, gens))
        ]
        res = self.extractor(recs)
        return [None if isinstance(r, RecordError) else r["extracted"] for r in res]

    def mechanism(self, name: str, eps: float | None):
        """(mechanism, its space) as the sweep builds them; one kept at a time (Cape's context model is large)."""
        key = (name, eps)
        if key not in self._mechs:
            self._mechs.clear()
            if eps is None:
                from ppt.stages.sanitize import build_mechanism

                mech = build_mechanism(name, None, device=self.sweep.cfg.device, quiet=True)
                self._mechs[key] = (mech, getattr(mech, "space", None))
            else:
                from ppt.experiments.sweep import _mechanism

                self._mechs[key] = _mechanism(name, eps, self.sweep)
        return self._mechs[key]

    def describe(self) -> dict:
        cfg = self.cfg
        remote = (
            {"remote": "OpenAI-compatible endpoint", "remote_model": cfg.remote_model}
            if cfg.remote
            else {
                "remote": "local model in-process (LocalQueryBackend, as `ppt serve`)",
                "remote_model": cfg.remote_model,
            }
        )
        return {**remote, "extract_model": cfg.extract_model}

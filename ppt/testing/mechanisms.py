"""Per-class test factories: build any registered mechanism from tiny test inputs.

Why here and keyed by class: the contract suite (tests/mechanisms/test_contract.py) runs over every
registered mechanism, and what a mechanism needs to be built (an embedding space, a causal LM, a masked
LM and a tagger) belongs to its class, not to a switch on its name in the test. A plug-in mechanism is
covered by the default factory (``eps`` and ``space``) or registers its own beside its class::

    @test_factory(MyMechanism)
    def _(name, eps, inputs, **params):
        return get_mechanism(name, eps, model=inputs.causal_lm, quiet=True, **params)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ppt.mechanisms import get_mechanism, mechanism_class
from ppt.mechanisms.base import Mechanism


@dataclass(frozen=True)
class TinyInputs:
    """What the factories build from: a tiny embedding space and tiny saved model directories."""

    space: Any
    causal_lm: str
    masked_lm: str


Factory = Callable[..., Mechanism]
FACTORIES: dict[type, Factory] = {}


def test_factory(*classes: type) -> Callable[[Factory], Factory]:
    """Register ``fn(name, eps, inputs, **params)`` as the test factory of ``classes`` (and subclasses)."""

    def register(fn: Factory) -> Factory:
        for cls in classes:
            FACTORIES[cls] = fn
        return fn

    return register


test_factory.__test__ = False  # a decorator, not a test pytest should collect


def build_tiny(name: str, inputs: TinyInputs, eps: float | None = None, **params) -> Mechanism:
    """``name`` built from ``inputs`` by the factory of the nearest class in its MRO; ``eps`` None: its default
    (a mechanism without eps gets its placeholder)."""
    cls = mechanism_class(name)
    if eps is None or not cls.takes_eps:
        eps = cls.default_eps if not cls.takes_eps else float(cls.defaults.get("eps", cls.default_eps))
    factory = next(FACTORIES[k] for k in cls.__mro__ if k in FACTORIES)
    return factory(name, eps, inputs, **params)


@test_factory(Mechanism)
def _over_a_space(name: str, eps: float, inputs: TinyInputs, **params) -> Mechanism:
    return get_mechanism(name, eps, space=inputs.space, quiet=True, **params)


def _register_builtins() -> None:
    from ppt.mechanisms.cape import Cape
    from ppt.mechanisms.placeholder import Placeholder
    from ppt.mechanisms.prosan import ProSan
    from ppt.mechanisms.prosan.lite import ProSanLite
    from ppt.mechanisms.surrogate import Surrogate

    @test_factory(Placeholder)  # replaces what a detector marks: a deny-list of the space's words stands in
    def _with_a_detector(name: str, eps: float, inputs: TinyInputs, **params) -> Mechanism:
        from ppt.detect.lists import PhraseDetector

        mech = get_mechanism(name, eps, quiet=True, **params)
        mech.detector = PhraseDetector(list(getattr(inputs.space, "vocab", []))[6:])
        return mech

    @test_factory(Surrogate)  # kinds with lists (names, towns, a category) and a format kind (numbers)
    def _with_typed_spans(name: str, eps: float, inputs: TinyInputs, **params) -> Mechanism:
        from ppt.testing.detect import KindDetector

        mech = get_mechanism(name, eps, quiet=True, **params)
        mech.detector = KindDetector(list(getattr(inputs.space, "vocab", []))[6:])
        return mech

    @test_factory(Cape)  # a context model
    def _with_a_causal_lm(name: str, eps: float, inputs: TinyInputs, **params) -> Mechanism:
        return get_mechanism(name, eps, model=inputs.causal_lm, device="cpu", quiet=True, **params)

    @test_factory(ProSanLite)  # any causal LM stands in for a distilled one
    def _prosan_lite(name: str, eps: float, inputs: TinyInputs, **params) -> Mechanism:
        # a random tiny LM never writes the newline that ends a rewrite: a few tokens show the contract (ids,
        # batches, seeds) as well as the default's 1.5x the record's length, at a fraction of the time
        params.setdefault("max_new_tokens", 6)
        return get_mechanism(name, eps, model=inputs.causal_lm, device="cpu", quiet=True, **params)

    @test_factory(ProSan)  # a rule tagger instead of spaCy, embedding similarity instead of a sentence model
    def _prosan(name: str, eps: float, inputs: TinyInputs, **params) -> Mechanism:
        from ppt.testing.prosan import RuleTagger

        return get_mechanism(
            name,
            eps,
            model=inputs.causal_lm,
            mlm=inputs.masked_lm,
            tagger=RuleTagger(),
            similarity="embedding",
            device="cpu",
            quiet=True,
            **params,
        )


_register_builtins()

__all__ = ["FACTORIES", "TinyInputs", "build_tiny", "test_factory"]

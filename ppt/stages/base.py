"""Stage: the one shape of every stream subcommand's library, so ``run_stream`` (and later a Ray backend)
drives sanitize, extract, query, attack and eval the same way.

    stage.prepare()              # load models / spaces / tables once, before the first record is read
    stage(records)               # one output dict or RecordError per record, in order
    stage.summary()              # optional end-of-run record (None: nothing to report)
    stage.signature()            # {"stage": name, **key parameters}: what a run of this stage computes
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ppt.io import Record, RecordError


class Stage(ABC):
    name: str = ""

    def prepare(self) -> None:
        """Load what every batch needs (models, spaces, tables) so the first batch pays nothing extra
        and a bad configuration fails before input is read. Idempotent."""

    @abstractmethod
    def __call__(self, records: list[Record]) -> list[dict | RecordError]:
        """Process one batch: one output dict or RecordError per record, in order."""

    def summary(self) -> dict | None:
        """The end-of-run record, when the stage has one."""
        return None

    def signature(self) -> dict[str, Any]:
        """The stage's name and the parameters that determine its output."""
        return {"stage": self.name}


def prepare_mechanism(mech: Any) -> None:
    """Build a mechanism's lazy tables now (mechanisms that have any expose ``prepare()``)."""
    prep = getattr(mech, "prepare", None)
    if callable(prep):
        prep()

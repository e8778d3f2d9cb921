"""Provenance stamps (``data["ppt"][stage]``) and conversion of numeric results to strict JSON.

orjson writes inf/NaN as null, which would silently lose e.g. an infinite composed epsilon, so
non-finite floats become the strings "inf", "-inf", "nan".
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import PurePath
from typing import Any

from ppt.io.errors import RecordError


def _float(x: float) -> float | str:
    if math.isfinite(x):
        return float(x)
    if math.isnan(x):
        return "nan"
    return "inf" if x > 0 else "-inf"


def jsonable(obj: Any) -> Any:
    """Recursively convert ``obj`` into values orjson writes faithfully.

    Non-finite floats -> "inf"/"-inf"/"nan"; numpy and torch scalars/arrays/tensors -> Python
    numbers and lists; tuples/sets -> lists; dataclasses -> dicts; paths -> str. numpy/torch are
    detected by module name so importing this stays cheap.
    """
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return _float(obj)
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        items = [jsonable(v) for v in obj]
        try:
            return sorted(items)
        except TypeError:
            return items
    if _is_array_lib(obj):
        if hasattr(obj, "detach"):  # torch tensor
            obj = obj.detach().cpu()
        if hasattr(obj, "tolist"):
            return jsonable(obj.tolist())
        if hasattr(obj, "item"):
            return jsonable(obj.item())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(dataclasses.asdict(obj))
    if isinstance(obj, PurePath):
        return str(obj)
    return obj  # let orjson handle (datetime, enum, uuid) or raise


def _is_array_lib(obj: Any) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith(("numpy", "torch"))


def stamp_block(data: Any, stage: str) -> dict | None:
    """``data["ppt"][stage]`` when the record carries that stage's stamp as an object, else None."""
    ppt = data.get("ppt") if isinstance(data, dict) else None
    block = ppt.get(stage) if isinstance(ppt, dict) else None
    return block if isinstance(block, dict) else None


def stamp(data: dict, stage: str, block: dict) -> dict:
    """Record what this stage did: ``data["ppt"][stage] = {**block, "version": ppt.__version__}``.

    Blocks from earlier stages are kept so the final record carries its whole provenance.
    Raises RecordError if the record already has a non-object ``ppt`` field (it is never overwritten).
    """
    from ppt import __version__

    existing = data.get("ppt")
    if existing is None:
        existing = data["ppt"] = {}
    elif not isinstance(existing, dict):
        raise RecordError("ppt_field_conflict", "field 'ppt' exists and is not an object; rename it")
    existing[stage] = {**block, "version": __version__}
    return data

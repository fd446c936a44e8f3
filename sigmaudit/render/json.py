"""JSON renderer: the result's contract (``view.data``, from ``to_dict()``), NaN/inf written as null."""

from __future__ import annotations

import json

from ..fmt import none_if_nan
from ..views import View
from . import SCHEMA_VERSION


def _clean(obj: object) -> object:
    if isinstance(obj, float):
        return none_if_nan(obj)
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    item = getattr(obj, "item", None)
    if callable(item):  # numpy scalar
        return _clean(item())
    return obj


def to_json_dict(view: View) -> dict[str, object]:
    """The contract as a dict with ``schema_version`` first and NaN/inf replaced by None."""
    body = {str(k): _clean(v) for k, v in view.data.items()}
    return {"schema_version": SCHEMA_VERSION, **{k: v for k, v in body.items() if k != "schema_version"}}


def render_json(view: View) -> str:
    """Pretty JSON text of the result's contract."""
    return json.dumps(to_json_dict(view), indent=2, allow_nan=False) + "\n"

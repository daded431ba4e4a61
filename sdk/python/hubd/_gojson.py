"""JSON written byte for byte as Go's encoding/json writes it.

The graph builders must produce the same bytes as the Go SDK's (the files
of sdk/testdata/graphs are the contract), so this encoder follows
encoding/json: compact, map keys sorted, "<", ">", "&", U+2028 and U+2029
escaped, floats in the shortest form that reads back (integral ones without
a fraction, exponents only below 1e-6 and from 1e21).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any, Callable, List, Mapping, Optional

__all__ = ["Number", "Struct", "dumps", "loads"]


class Struct(dict):  # type: ignore[type-arg]
    """A JSON object whose keys are written in insertion order, as Go writes
    the fields of a struct (other mappings are written with sorted keys, as
    Go writes a map)."""


class Number(str):
    """A JSON number kept as written, so that a decoded graph encodes back to
    the same bytes (Go keeps such numbers as json.Number)."""

    __slots__ = ()

    def __float__(self) -> float:
        return float(str(self))

    def __int__(self) -> int:
        return int(Decimal(str(self)))


_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _string(s: str) -> str:
    out = json.dumps(s, ensure_ascii=False)
    if any(c in out for c in _GO_ESCAPES):
        out = "".join(_GO_ESCAPES.get(c, c) for c in out)
    return out


def _float(f: float) -> str:
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"unsupported value: {f!r} (JSON numbers are finite)")
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        s = repr(f)  # shortest digits, exponent with at least two digits
        if len(s) >= 4 and s[-4] == "e" and s[-3] == "-" and s[-2] == "0":
            s = s[:-2] + s[-1]  # Go writes e-7, not e-07
        return s
    return format(Decimal(repr(f)).normalize(), "f")


def dumps(value: Any, default: Optional[Callable[[Any], Any]] = None) -> str:
    """Encode value as Go's json.Marshal would encode the same Go value.

    default, when given, turns an object the encoder does not know into one
    it does (as json.dumps's default)."""
    out: List[str] = []
    _encode(value, out, default)
    return "".join(out)


def _encode(v: Any, out: List[str], default: Optional[Callable[[Any], Any]]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, Number):
        out.append(str(v))
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, int):
        out.append(str(int(v)))
    elif isinstance(v, float):
        out.append(_float(v))
    elif isinstance(v, Mapping):
        out.append("{")
        keys = list(v.keys())
        for k in keys:
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, not {type(k).__name__}")
        for i, k in enumerate(keys if isinstance(v, Struct) else sorted(keys)):
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _encode(v[k], out, default)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _encode(item, out, default)
        out.append("]")
    elif default is not None:
        _encode(default(v), out, default)
    else:
        raise TypeError(f"{type(v).__name__} is not JSON serializable")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON number {name}")


def loads(text: str) -> Any:
    """Decode JSON keeping numbers as written (Number)."""
    return json.loads(text, parse_float=Number, parse_int=Number, parse_constant=_reject_constant)

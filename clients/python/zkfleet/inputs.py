"""Jobs from inputs: one circom ``input.json`` per partition, from which the
workers compute the witnesses themselves (``SubmitRequest.inputs``).

>>> client.submit("multiplier", inputs=[{"a": "3", "b": "11"}])
>>> client.submit("multiplier", inputs=[Path("input.json")])     # a file, sent as is
>>> client.submit("multiplier", inputs=[b'{"a": "3", "b": "11"}']) # JSON text, as bytes

Each input is one of:

* a ``dict`` (any mapping): serialized with :func:`json.dumps` (compact, keys
  in their order, non-ASCII kept as UTF-8); the same dict gives the same
  bytes, so a retry under the same request id is the same request. Python
  ints beyond 2**53 in magnitude are written as decimal strings: snarkjs (and
  zkfleet's workers, which read input.json as it does) would read a JSON
  number that large as a JavaScript double and round it;
* ``bytes`` / ``bytearray`` / ``memoryview``: the input.json's text (UTF-8),
  sent byte for byte;
* a ``str`` or :class:`os.PathLike`: the path of an input.json file, read and
  sent byte for byte (a ``str`` is a path, as for witnesses; pass JSON text
  as bytes or a dict).

Before anything is sent each one must be strict JSON whose top-level value is
an object, nested at most :data:`MAX_INPUT_JSON_DEPTH` levels (the broker's
own check); otherwise :class:`~zkfleet.InvalidRequest` names the partition.
The broker bounds each one's size (its ``--max-input-bytes``, 1 MiB by
default: :class:`~zkfleet.TooLarge` above).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Union

from .errors import InvalidRequest

MAX_INPUT_JSON_DEPTH = 32  # objects and arrays, the top-level object included (the broker's bound)

InputJson = Union[Mapping, bytes, bytearray, memoryview, str, "os.PathLike[str]"]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_INPUT_JSON_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def input_json_problem(data: bytes) -> Union[str, None]:
    """Why ``data`` is not an input.json the broker takes, or None."""
    if not data:
        return "empty; an input.json is a JSON object"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 (at byte {e.start})"
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        return f"nested deeper than {MAX_INPUT_JSON_DEPTH} levels"
    except ValueError as e:
        return f"not valid JSON ({e})"
    if not isinstance(value, dict):
        return "its top-level value is not an object; an input.json is a JSON object"
    if _depth(value) > MAX_INPUT_JSON_DEPTH:
        return f"nested deeper than {MAX_INPUT_JSON_DEPTH} levels"
    return None


def _exact_ints(value: Any) -> Any:
    """``value`` with every int too large for a double written as a string."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value) if abs(value) > 2**53 else value
    if isinstance(value, Mapping):
        return {k: _exact_ints(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_exact_ints(v) for v in value]
    return value


def input_json_bytes(value: InputJson, partition: int) -> bytes:
    """The bytes a SUBMIT carries for one partition's input (see the module's
    doc); raises :class:`~zkfleet.InvalidRequest` naming ``partition``."""
    where = f"inputs[{partition}]"
    if isinstance(value, Mapping):
        try:
            data = json.dumps(_exact_ints(value), separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise InvalidRequest(f"{where} cannot be written as JSON ({e}); nothing was sent") from None
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    elif isinstance(value, (str, os.PathLike)):
        try:
            with open(value, "rb") as f:
                data = f.read()
        except OSError as e:
            hint = ""
            if isinstance(value, str) and value.lstrip().startswith("{"):
                hint = " (a str is a path: pass JSON text as bytes, or a dict)"
            raise InvalidRequest(f"{where}: cannot read input file {str(value)[:200]!r}: {e.strerror}{hint}; "
                                 "nothing was sent") from None
    else:
        raise InvalidRequest(f"{where} is a {type(value).__name__}; give a dict, the JSON text as bytes, or a "
                             "path; nothing was sent")
    problem = input_json_problem(data)
    if problem is not None:
        raise InvalidRequest(f"{where} is not an input.json: {problem}; nothing was sent")
    return data

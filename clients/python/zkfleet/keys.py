"""CURVE key files written by ``zkctl keygen --out NAME``.

``NAME.pub`` holds ``public-key = <40-char Z85>`` (or the bare key on a line
of its own); ``NAME.secret`` (mode 0600) holds ``public-key`` and
``secret-key`` lines. Blank lines and lines starting with ``#`` are ignored.
The format is fleet/zkfleet/fleet/curve_keys.hpp's; like the C++ reader this
one refuses a secret file readable by group or others, unknown names,
repeated names, keys that are not 40 chars of Z85, and a secret file whose
public key is not the one its secret key yields.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, Tuple, Union

import zmq

_Z85 = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
_MAX_BYTES = 64 * 1024

PathLike = Union[str, "os.PathLike[str]"]


class KeyFileError(ValueError):
    """A key file is missing, unreadable or malformed (the message names it)."""


def _is_key(value: str) -> bool:
    return len(value) == 40 and all(c in _Z85 for c in value)


def _parse(path: PathLike) -> Dict[str, str]:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
    except OSError as e:
        raise KeyFileError(f"cannot read key file {path}: {e.strerror}") from e
    if len(data) > _MAX_BYTES:
        raise KeyFileError(f"{path}: larger than 64 KiB, not a key file")
    fields: Dict[str, str] = {}
    for number, raw in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if _is_key(line):  # a bare public key (what `zkctl keygen` prints)
            name, value = "public-key", line
        elif "=" in line:
            name, value = (part.strip() for part in line.split("=", 1))
        else:
            raise KeyFileError(f"{path}:{number}: expected 'name = value'")
        if name not in ("public-key", "secret-key"):
            raise KeyFileError(f"{path}:{number}: unknown name '{name}' (expected public-key or secret-key)")
        if name in fields:
            raise KeyFileError(f"{path}:{number}: {name} given twice")
        if not _is_key(value):
            raise KeyFileError(f"{path}:{number}: {name} is not a 40-char Z85 key")
        fields[name] = value
    return fields


def read_secret_key(path: PathLike) -> Tuple[bytes, bytes]:
    """The (public, secret) Z85 keys of a ``NAME.secret`` file.

    A file holding only a public key (``NAME.pub`` given by mistake) is
    refused saying so; only a file that does hold a secret is judged by its
    mode (group or others may not read it)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise KeyFileError(f"cannot read key file {path}: {e.strerror}") from e
    fields = _parse(path)
    if "secret-key" not in fields:
        if "public-key" in fields:
            raise KeyFileError(f"secret key file {path} holds only a public key: give this peer's NAME.secret "
                               "(zkctl keygen writes NAME.pub and NAME.secret)")
        raise KeyFileError(f"{path}: no secret-key line")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"{path} is accessible by group or others: chmod 600 {path}")
    secret = fields["secret-key"].encode()
    public = zmq.curve_public(secret)
    if "public-key" in fields and fields["public-key"].encode() != public:
        raise KeyFileError(f"{path}: its public-key is not the one its secret-key yields")
    return public, secret


def read_public_key(path: PathLike) -> bytes:
    """The Z85 public key of a ``NAME.pub`` file. A file holding a secret key
    is refused: another peer's secret (``broker.secret`` as the broker's
    public key) never belongs on this host."""
    fields = _parse(path)
    if "secret-key" in fields:
        raise KeyFileError(f"public key file {path} holds a secret key: give the peer's NAME.pub instead (a secret "
                           "key stays on the host it belongs to; if this one was copied here, remove the copy)")
    if "public-key" not in fields:
        raise KeyFileError(f"{path}: no public-key line")
    return fields["public-key"].encode()

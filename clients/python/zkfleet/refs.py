"""Witnesses by reference: the worker fetches the .wtns itself.

Instead of a witness's bytes travelling through the client and the broker as
frames after the SUBMIT, a submit may carry, per partition, a
:class:`WitnessRef`: the URL the workers fetch it from (``file://``,
``http://``, ``https://``; the operator allows prefixes with ``zkworker
--fetch-allow``), its exact size and its SHA-256. The worker proves only if
what it fetched matches both; the store must keep the object unchanged until
the job's result arrives (docs/operations.md, "Witnesses by reference").

>>> ref = witness_ref_of_file("/shared/witnesses/w.wtns")   # file:///shared/witnesses/w.wtns
>>> client.submit("transfer", witness_refs=[ref], expected_public=[public_json])

A URL may carry a credential (a presigned query string, ``user:password@``):
``repr()`` of a reference and every message of this package show it
redacted (:func:`redact_url`); only the SUBMIT carries it whole.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from .errors import InvalidRequest

MAX_WITNESS_URL_BYTES = 4096   # WitnessRef.url, UTF-8 bytes
SHA256_BYTES = 32              # WitnessRef.sha256
_SCHEMES = ("file", "http", "https")
_SCHEME = re.compile(r"[A-Za-z0-9+.-]{1,16}")
_READ_BYTES = 4 << 20


def redact_url(url: str) -> str:
    """``url`` without userinfo, query string or fragment:
    ``https://key:secret@s3.example/b/w.wtns?X-Amz-Signature=...`` becomes
    ``https://s3.example/b/w.wtns``. What is not scheme://authority/path
    becomes ``<url>``. (The broker's and zkctl's ``RedactUrl``, in Python.)"""
    colon = url.find("://")
    if colon <= 0 or not _SCHEME.fullmatch(url[:colon]):
        return "<url>"
    rest = url[colon + 3:]
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]  # query and fragment first: an '@' there is not userinfo
    slash = rest.find("/")
    authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    authority = authority.rsplit("@", 1)[-1]
    out = f"{url[:colon].lower()}://{authority}{path}"
    return "".join("?" if (ord(c) < 0x20 or ord(c) == 0x7f) else c for c in out)


def url_problem(url: str) -> Optional[str]:
    """Why ``url`` cannot be a witness reference's (naming it redacted), or None."""
    if not isinstance(url, str):
        return f"a witness URL must be a str, not {type(url).__name__}"
    if not url:
        return "witness reference without a URL"
    size = len(url.encode("utf-8"))
    if size > MAX_WITNESS_URL_BYTES:
        return f"witness URL is {size} bytes; at most {MAX_WITNESS_URL_BYTES} (zkfleet.refs.MAX_WITNESS_URL_BYTES)"
    shown = redact_url(url)
    if any(ord(c) <= 0x20 or ord(c) == 0x7f for c in url):
        return f"witness URL {shown} contains a space or a control character"
    colon = url.find("://")
    if colon < 0 or url[:colon].lower() not in _SCHEMES:
        return f"witness URL {shown} is not file://, http:// or https://"
    return None


@dataclass(frozen=True)
class WitnessRef:
    """One partition's witness by reference (``SubmitRequest.witness_refs``).

    ``url``: where the workers fetch the .wtns (``file://``, ``http://``,
    ``https://``; at most :data:`MAX_WITNESS_URL_BYTES`). ``size``: its exact
    size in bytes. ``sha256``: the SHA-256 of those bytes, 32 raw bytes
    (``bytes.fromhex(hexdigest)`` of a hex one). Checked when made:
    :class:`~zkfleet.InvalidRequest` for anything else. ``repr()`` shows the
    URL redacted."""

    url: str
    size: int
    sha256: bytes

    def __post_init__(self) -> None:
        problem = url_problem(self.url)
        shown = redact_url(self.url) if isinstance(self.url, str) else "<url>"
        if problem is None and (isinstance(self.size, bool) or not isinstance(self.size, int) or self.size <= 0):
            problem = f"witness {shown} has size {self.size!r}; give the object's exact size in bytes (an int > 0)"
        if problem is None and isinstance(self.sha256, str):
            problem = (f"witness {shown}: sha256 must be the {SHA256_BYTES} raw bytes of the digest, not a str "
                       "(bytes.fromhex(hex_digest) of a hex one)")
        if problem is None and (not isinstance(self.sha256, (bytes, bytearray)) or len(self.sha256) != SHA256_BYTES):
            length = len(self.sha256) if isinstance(self.sha256, (bytes, bytearray)) else type(self.sha256).__name__
            problem = f"witness {shown} has a sha256 of {length} bytes; a SHA-256 digest is {SHA256_BYTES}"
        if problem is not None:
            raise InvalidRequest(problem + "; nothing was sent")
        if isinstance(self.sha256, bytearray):
            object.__setattr__(self, "sha256", bytes(self.sha256))

    def __repr__(self) -> str:
        return f"WitnessRef(url={redact_url(self.url)!r}, size={self.size}, sha256={self.sha256.hex()})"


def witness_ref_of_file(path: Union[str, "os.PathLike[str]"], url: Optional[str] = None) -> WitnessRef:
    """A reference to the .wtns at ``path``: its size and SHA-256, read here
    in one pass. ``url`` is where the workers will fetch it (default:
    ``file://`` and the absolute path, for a filesystem the workers share,
    e.g. NFS mounted at the same place); pass the http(s) URL when the same
    file is served (or uploaded) there."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_READ_BYTES):
            digest.update(chunk)
            size += len(chunk)
    if size == 0:
        raise InvalidRequest(f"witness file {os.fspath(path)} is empty; nothing was sent")
    return WitnessRef(url=url if url is not None else Path(path).resolve().as_uri(), size=size,
                      sha256=digest.digest())

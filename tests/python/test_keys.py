"""zkfleet.keys reads the key files `zkctl keygen` writes, with the C++ reader's checks."""

from __future__ import annotations

import subprocess

import pytest
import zmq

from conftest import binary
from zkfleet import KeyFileError, read_public_key, read_secret_key


def test_reads_what_zkctl_keygen_writes(tmp_path):
    subprocess.run([binary("zkctl"), "keygen", "--out", str(tmp_path / "me")], check=True, capture_output=True)
    public, secret = read_secret_key(tmp_path / "me.secret")
    assert zmq.curve_public(secret) == public
    assert read_public_key(tmp_path / "me.pub") == public


def test_each_key_file_where_the_other_belongs_is_refused_saying_so(tmp_path):
    subprocess.run([binary("zkctl"), "keygen", "--out", str(tmp_path / "me")], check=True, capture_output=True)
    with pytest.raises(KeyFileError, match="holds a secret key"):
        read_public_key(tmp_path / "me.secret")
    with pytest.raises(KeyFileError, match="holds only a public key") as raised:
        read_secret_key(tmp_path / "me.pub")  # mode 0644: still not "chmod 600"
    assert "chmod" not in str(raised.value)


def test_format_rules(tmp_path):
    public, secret = (k.decode() for k in zmq.curve_keypair())
    bare = tmp_path / "bare.pub"
    bare.write_text(f"# a comment\n\n  {public}  \n")
    assert read_public_key(bare) == public.encode()

    def secret_file(text: str):
        path = tmp_path / "x.secret"
        path.write_text(text)
        path.chmod(0o600)
        return path

    assert read_secret_key(secret_file(f"public-key = {public}\nsecret-key = {secret}\n"))[1] == secret.encode()
    with pytest.raises(KeyFileError, match="unknown name 'colour'"):
        read_secret_key(secret_file(f"colour = {public}\nsecret-key = {secret}\n"))
    with pytest.raises(KeyFileError, match="given twice"):
        read_secret_key(secret_file(f"secret-key = {secret}\nsecret-key = {secret}\n"))
    with pytest.raises(KeyFileError, match="not a 40-char Z85 key"):
        read_secret_key(secret_file("secret-key = short\n"))
    other_public = zmq.curve_keypair()[0].decode()
    with pytest.raises(KeyFileError, match="is not the one its secret-key yields"):
        read_secret_key(secret_file(f"public-key = {other_public}\nsecret-key = {secret}\n"))
    with pytest.raises(KeyFileError, match="holds only a public key"):
        read_secret_key(secret_file(f"public-key = {public}\n"))
    with pytest.raises(KeyFileError, match="no secret-key line"):
        read_secret_key(secret_file("# nothing\n"))

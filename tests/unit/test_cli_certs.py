"""`minikafka certs create`: a CA and certificates in a directory, and the properties
that use them."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from click.testing import CliRunner
from cryptography import x509

from minikafka.cli.main import cli
from minikafka.security.tls import ssl_settings


def properties(output: str) -> dict[str, str]:
    return dict(re.findall(r"^\s+(ssl\.[a-z.]+)=(.*)$", output, re.M))


def test_create(tmp_path: Path) -> None:
    d = tmp_path / "certs"
    result = CliRunner().invoke(cli, ["certs", "create", "--dir", str(d), "broker1", "client1"])
    assert result.exit_code == 0, result.output
    assert "created" in result.output
    for name in ("ca.pem", "ca.key", "broker1.pem", "broker1.key", "broker1.keystore.pem"):
        assert (d / name).is_file(), name
    for key in ("ca.key", "broker1.key", "broker1.keystore.pem", "client1.key"):
        assert stat.S_IMODE((d / key).stat().st_mode) == 0o600, key
    # The last certificate's properties: they name its files, which ssl_settings reads.
    props = properties(result.output.split("client1: ")[1])
    assert props == {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str((d / "client1.keystore.pem").resolve()),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str((d / "ca.pem").resolve()),
    }
    assert ssl_settings(props).keystore_location == props["ssl.keystore.location"]
    cert = x509.load_pem_x509_certificate((d / "broker1.pem").read_bytes())
    assert cert.subject.rfc4514_string() == "CN=broker1,OU=minikafka"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["broker1", "localhost"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def test_a_second_run_reuses_the_ca(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["certs", "create", "--dir", str(tmp_path), "broker1"])
    assert first.exit_code == 0, first.output
    ca = (tmp_path / "ca.pem").read_bytes()
    second = runner.invoke(
        cli,
        [
            "certs",
            "create",
            "--dir",
            str(tmp_path),
            "broker2",
            "--host",
            "b2.example",
            "--host",
            "10.0.0.2",
        ],
    )
    assert second.exit_code == 0, second.output
    assert "reusing" in second.output
    assert (tmp_path / "ca.pem").read_bytes() == ca
    cert = x509.load_pem_x509_certificate((tmp_path / "broker2.pem").read_bytes())
    ca_cert = x509.load_pem_x509_certificate(ca)
    assert cert.issuer == ca_cert.subject
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["b2.example"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.0.0.2"]
    # Another CA name for the same directory is an error, not a silent reuse.
    third = runner.invoke(
        cli, ["certs", "create", "--dir", str(tmp_path), "--ca-name", "other", "broker3"]
    )
    assert third.exit_code != 0 and "already holds the CA" in third.output


def test_key_password(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["certs", "create", "--dir", str(tmp_path), "--key-password", "pw", "client1"]
    )
    assert result.exit_code == 0, result.output
    assert "BEGIN ENCRYPTED PRIVATE KEY" in (tmp_path / "client1.key").read_text()
    assert "ssl.key.password=<the --key-password>" in result.output
    assert "pw\n" not in result.output


def test_a_bad_name_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["certs", "create", "--dir", str(tmp_path), "../x"])
    assert result.exit_code != 0 and "certificate name" in result.output

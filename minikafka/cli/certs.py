"""`minikafka certs`: throwaway TLS certificates for SSL listeners on a local cluster or
docker compose, in the PEM files Kafka's ssl.keystore.type=PEM reads."""

from __future__ import annotations

from pathlib import Path

import click

from minikafka.security.certs import (
    CA_CERTIFICATE,
    CertificateAuthority,
    make_ca,
)


@click.group()
def certs() -> None:
    """Throwaway TLS certificates for SSL listeners: a CA and the certificates it signs."""


@certs.command()
@click.option(
    "--dir",
    "directory",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the CA and the certificates go; a CA already there is reused.",
)
@click.option(
    "--ca-name",
    default="minikafka-ca",
    show_default=True,
    help="The common name of a new CA.",
)
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--host",
    "hosts",
    multiple=True,
    help="A DNS name or IP address each certificate is valid for (repeat; default: the "
    "certificate's NAME, localhost and 127.0.0.1).",
)
@click.option(
    "--days", type=click.IntRange(min=1), default=365, show_default=True, help="Validity."
)
@click.option(
    "--key-password",
    default=None,
    help="Encrypt the private keys with this password (Kafka's ssl.key.password; "
    "PBES2, which Java clients cannot read: see minikafka/security/certs.py).",
)
@click.pass_context
def create(
    ctx: click.Context,
    directory: Path,
    ca_name: str,
    names: tuple[str, ...],
    hosts: tuple[str, ...],
    days: int,
    key_password: str | None,
) -> None:
    """Make a CA in DIR (or reuse the one there) and a certificate signed by it for each
    NAME, with subject CN=NAME,OU=minikafka; print the files and the ssl.* properties
    that use them."""
    directory = directory.resolve()
    ca_name_given = ctx.get_parameter_source("ca_name") is not click.core.ParameterSource.DEFAULT
    if (directory / CA_CERTIFICATE).exists():
        try:
            ca = CertificateAuthority.load(directory)
        except (OSError, ValueError) as e:
            raise click.ClickException(f"cannot reuse the CA in {directory}: {e}") from None
        if ca_name_given and ca.name != ca_name:
            raise click.UsageError(
                f"{directory} already holds the CA {ca.name!r}, not {ca_name!r}: "
                "use another --dir for another CA"
            )
        click.echo(f"CA {ca.name}: reusing {ca.certificate_path}")
    else:
        try:
            ca = make_ca(directory, ca_name, days=days)
        except (OSError, ValueError) as e:
            raise click.ClickException(str(e)) from None
        click.echo(f"CA {ca.name}: created {ca.certificate_path} and its key")
    for name in names:
        try:
            issued = ca.issue(
                directory,
                name,
                hosts=hosts or (name, "localhost", "127.0.0.1"),
                days=days,
                key_password=key_password,
            )
        except (OSError, ValueError) as e:
            raise click.ClickException(f"{name}: {e}") from None
        click.echo("")
        click.echo(f"{name}: CN={name},OU=minikafka")
        click.echo(f"  certificate  {issued.certificate}  (with the CA's: the chain)")
        click.echo(f"  key          {issued.key}")
        click.echo(f"  keystore     {issued.keystore}  (key and chain)")
        click.echo(f"  truststore   {issued.truststore}")
        for key, value in issued.kafka_properties().items():
            click.echo(f"  {key}={value}")
        if issued.key_encrypted:
            click.echo("  ssl.key.password=<the --key-password>")

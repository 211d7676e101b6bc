"""A certificate subject as Java's X500Principal.getName() writes it (security/x500.py):
each case below is a DER Name and the string OpenJDK 17 printed for a certificate with
that subject."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from minikafka.security.x500 import rfc2253_name, subject_name

JAVA = [
    # typical: most specific first, the RFC 2253 keywords
    (
        "303a310b3009060355040613025553310d300b060355040a0c0461636d65310c300a060355040b0c03656e67310e300c06035504030c05616c696365",
        "CN=alice,OU=eng,O=acme,C=US",
    ),
    (
        "306a31133011060a0992268993f22c6401191603636f6d31173015060a0992268993f22c64011916076578616d706c6531123010060a0992268993f22c6401010c027531310d300b06035504090c044d61696e310a300806035504070c014c310b300906035504080c025354",
        "ST=ST,L=L,STREET=Main,UID=u1,DC=example,DC=com",
    ),
    ("30163114300806035504030c01783008060355040b0c0179", "CN=x+OU=y"),
    ("30173115301306035504030c0cc3a920c3bc20e697a5e69cac", "CN=é ü 日本"),
    # Java escapes = and # anywhere, not only a leading #
    (
        "3020311e301c06035504030c15612c622b6322645c653c663e673b683d69236a2f6b",
        'CN=a\\,b\\+c\\"d\\\\e\\<f\\>g\\;h\\=i\\#j/k',
    ),
    ("3010310e300c06035504030c05236c656164", "CN=\\#lead"),
    # every leading and trailing space (and carriage return)
    (
        "3021311f301d06035504030c16202074776f206c65616420616e6420747261696c2020",
        "CN=\\ \\ two lead and trail\\ \\ ",
    ),
    ("30123110300e06035504030c07200d2078200d20", "CN=\\ \\\r\\ x\\ \\\r\\ "),
    ("300e310c300a06035504030c0374720d", "CN=tr\\\r"),
    ("300c310a300806035504030c0120", "CN=\\ "),
    ("300b3109300706035504030c00", "CN="),
    # NUL as \00; other control characters as they are
    ("300e310c300a06035504030c03610062", "CN=a\\00b"),
    (
        "30233111300f06035504030c087461620968657265310e300c060355040a0c0563746c0178",
        "O=ctl\x01x,CN=tab\there",
    ),
    ("301d311b301906035504030c12787f79214024255e262a5b5d7b7d7c7e605f", "CN=x\x7fy!@$%^&*[]{}|~`_"),
    # attributes without an RFC 2253 keyword: the OID and the DER value in hex
    (
        "30223114301206092a864886f70d01090116056140622e63310a300806035504030c0178",
        "CN=x,1.2.840.113549.1.9.1=#16056140622e63",
    ),
    (
        "3041310c300a06035504051303313233310d300b060355040c0c04626f7373310a3008060355042a0c0147310a300806035504040c0153310a300806035504030c0178",
        "CN=x,2.5.4.4=#0c0153,2.5.4.42=#0c0147,2.5.4.12=#0c04626f7373,2.5.4.5=#1303313233",
    ),
    (
        "301f310b30090603550406130255533110300e06092b06010401868d1f010c017a",
        "1.3.6.1.4.1.99999.1=#0c017a,C=US",
    ),
    # string types: Printable, IA5 and T61 as text (decoded as UTF-8, BMPString too,
    # which garbles it as Java does); Universal, Visible and NumericString in hex
    (
        "302c310f300d06035504031e060062006d0070310b3009060355040a13027072310c300a060355040b1603696135",
        "OU=ia5,O=pr,CN=\\00b\\00m\\00p",
    ),
    ("3010310e300c06035504031405636166c3a9", "CN=café"),
    ("30173115301306035504031c0c000000750000006e00000069", "CN=#1c0c000000750000006e00000069"),
    ("300e310c300a06035504031a03766973", "CN=#1a03766973"),
    ("300e310c300a06035504031203313233", "CN=#1203313233"),
]


@pytest.mark.parametrize(("der", "java"), JAVA)
def test_names_as_java_writes_them(der: str, java: str) -> None:
    assert rfc2253_name(bytes.fromhex(der)) == java


def certificate(subject: x509.Name) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuer")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


def test_subject_of_a_certificate() -> None:
    subject = x509.Name.from_rfc4514_string("CN=alice,OU=eng,O=acme,C=US")
    der = certificate(subject)
    # The subject, not the issuer; and here cryptography's RFC 4514 string agrees.
    assert subject_name(der) == "CN=alice,OU=eng,O=acme,C=US" == subject.rfc4514_string()


def test_where_rfc4514_differs() -> None:
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b.c"),
            x509.NameAttribute(NameOID.COMMON_NAME, "x=y"),
        ]
    )
    assert subject.rfc4514_string() == "CN=x=y,1.2.840.113549.1.9.1=a@b.c"
    assert subject_name(certificate(subject)) == "CN=x\\=y,1.2.840.113549.1.9.1=#16056140622e63"


@pytest.mark.parametrize("der", ["", "30", "3005310330", "300331"])
def test_truncated_der_is_refused(der: str) -> None:
    with pytest.raises(ValueError):
        rfc2253_name(bytes.fromhex(der))

"""A certificate subject as Kafka sees it: Java's X500Principal.getName(), the RFC 2253
string that DefaultKafkaPrincipalBuilder hands to ssl.principal.mapping.rules and that
`DEFAULT` makes the principal's name (so ACLs name it).

cryptography's Name.rfc4514_string() gives the same string for typical subjects
(`CN=alice,OU=eng,O=acme,C=US`: most specific RDN first, the same keywords) but not always:
Java also escapes `=` and `#` inside a value, escapes every leading and trailing space (and
carriage return), writes NUL as `\\00`, and writes any attribute without an RFC 2253
keyword (emailAddress, serialNumber, title...) as its OID and `#` and the hex of its DER
encoding (`1.2.840.113549.1.9.1=#16...`), where cryptography writes the OID and the text.
So the subject is read from the certificate's DER here and written by Java's rules
(sun.security.x509.AVA.toRFC2253String), checked against OpenJDK 17's output for each case
the tests list. As in Java, BMPString values are decoded as UTF-8 (which garbles them:
Java does too) and values of other string types (UniversalString, VisibleString,
NumericString) are written as hex.
"""

from __future__ import annotations

from typing import Final

# The attributes Java names in RFC 2253 output (AVAKeyword's rfc2253Compliant keywords).
_KEYWORDS: Final = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# The DER string types Java writes as text (AVA.isDerString, non-canonical): Printable,
# T61, IA5, General, BMP and UTF8String.
_STRING_TAGS: Final = frozenset({0x13, 0x14, 0x16, 0x1B, 0x1E, 0x0C})
_ESCAPED: Final = ',=+<>#;"\\'
_SEQUENCE: Final = 0x30
_SET: Final = 0x31
_OID: Final = 0x06


class _Der:
    """Reads DER's tag-length-value items from a buffer."""

    def __init__(self, data: bytes, start: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end

    def more(self) -> bool:
        return self.pos < self.end

    def item(self) -> tuple[int, int, int, int]:
        """The next item: (tag, start of the whole item, start of content, end)."""
        data, start = self.data, self.pos
        if start + 2 > self.end:
            raise ValueError("truncated DER")
        tag = data[start]
        pos = start + 1
        if tag & 0x1F == 0x1F:  # a high tag number: continues while the top bit is set
            while pos < self.end and data[pos] & 0x80:
                pos += 1
            pos += 1
        if pos >= self.end:
            raise ValueError("truncated DER")
        length = data[pos]
        pos += 1
        if length & 0x80:
            count = length & 0x7F
            if count == 0 or count > 4:
                raise ValueError("unsupported DER length")
            length = int.from_bytes(data[pos : pos + count], "big")
            pos += count
        end = pos + length
        if end > self.end:
            raise ValueError("truncated DER")
        self.pos = end
        return tag, start, pos, end

    def expect(self, tag: int) -> tuple[int, int]:
        """The next item, which must have this tag: (start of content, end)."""
        got, _, content, end = self.item()
        if got != tag:
            raise ValueError(f"expected DER tag {tag:#x}, found {got:#x}")
        return content, end


def subject_name(certificate_der: bytes) -> str:
    """The subject of a DER certificate as Java's X500Principal.getName() writes it."""
    cert = _Der(certificate_der)
    content, end = cert.expect(_SEQUENCE)
    tbs = _Der(certificate_der, *_Der(certificate_der, content, end).expect(_SEQUENCE))
    # TBSCertificate: [0] version (optional), serialNumber, signature, issuer, validity,
    # subject.
    tag, start, _, _ = tbs.item()
    if tag != 0xA0:
        tbs.pos = start
    for _ in range(4):
        tbs.item()
    tag, start, _, end = tbs.item()
    if tag != _SEQUENCE:
        raise ValueError("certificate subject is not a Name")
    return rfc2253_name(certificate_der[start:end])


def rfc2253_name(name_der: bytes) -> str:
    """A DER X.501 Name as Java's X500Principal.getName() (RFC 2253) writes it: the RDNs
    last first, the attributes of a multi-valued RDN joined by `+` in their encoded order."""
    rdns: list[str] = []
    name = _Der(name_der, *_Der(name_der).expect(_SEQUENCE))
    while name.more():
        rdn = _Der(name_der, *name.expect(_SET))
        avas: list[str] = []
        while rdn.more():
            ava = _Der(name_der, *rdn.expect(_SEQUENCE))
            oid_start, oid_end = ava.expect(_OID)
            tag, value_start, content, value_end = ava.item()
            oid = _oid_text(name_der[oid_start:oid_end])
            keyword = _KEYWORDS.get(oid)
            if keyword is None or tag not in _STRING_TAGS:
                value = "#" + name_der[value_start:value_end].hex()
                avas.append(f"{keyword or oid}={value}")
            else:
                text = name_der[content:value_end].decode("utf-8", errors="replace")
                avas.append(f"{keyword}={_escape(text)}")
        rdns.append("+".join(avas))
    return ",".join(reversed(rdns))


def _escape(value: str) -> str:
    escaped = "".join("\\" + c if c in _ESCAPED else "\\00" if c == "\0" else c for c in value)
    # Every space or carriage return before the first other character or after the last
    # is escaped.
    lead = len(escaped) - len(escaped.lstrip(" \r"))
    trail = len(escaped) - len(escaped.rstrip(" \r"))
    if lead == len(escaped):
        trail = 0
    middle = escaped[lead : len(escaped) - trail]
    head = "".join("\\" + c for c in escaped[:lead])
    tail = "".join("\\" + c for c in escaped[len(escaped) - trail :])
    return head + middle + tail


def _oid_text(der: bytes) -> str:
    arcs: list[int] = []
    value = 0
    for byte in der:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs:
        raise ValueError("empty OID")
    first = arcs[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return ".".join(str(a) for a in head + arcs[1:])

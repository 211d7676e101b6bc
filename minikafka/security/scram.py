"""SASL/SCRAM (RFC 5802, RFC 7677) as Kafka's broker runs it, sans IO.

Mirrors Kafka's `ScramMechanism`, `ScramFormatter`, `ScramMessages`, `ScramCredentialUtils`,
`ScramSaslServer` and `ScramSaslClient`:

- SCRAM-SHA-256 and SCRAM-SHA-512 with KIP-554's type codes (1 and 2) and Kafka's
  iteration bounds (4096 to 16384);
- a user's credential (salt, StoredKey, ServerKey, iterations) as the ZooKeeper-era broker
  keeps it in /config/users/<user>: `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`;
- KIP-554's AlterUserScramCredentials derivation: the client sends the salt and the salted
  password, the broker derives StoredKey and ServerKey from them;
- one server-side exchange: client-first -> server-first, client-final -> server-final;
- the client side, for tests and for brokers authenticating to each other.

Like Kafka, passwords are not SASLprep-normalised (Kafka's ScramFormatter.normalize is
plain UTF-8), so minikafka and Kafka derive the same keys from the same password.

Where minikafka is stricter than Kafka, it follows RFC 5802: the channel binding `c=` is
checked against the gs2 header, the final nonce must equal the combined nonce (Kafka only
checks that it ends with it), a mandatory extension `m=` is refused, and the AuthMessage is
built from the messages as received (Kafka rebuilds it from parsed fields). Any valid
exchange with a Kafka client is accepted all the same.

The failure messages are what Kafka's SaslServerAuthenticator puts in SaslAuthenticate's
error_message: Kafka sends a SaslAuthenticationException's text verbatim, but replaces a
SaslException's (which may tell whether a user exists) by a generic text. The broker-side
detail is kept in `ScramAuthenticationError.reason`, for the broker's log only.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, NoReturn

# Kafka's ScramMechanism.minIterations/maxIterations: a credential with fewer iterations is
# refused at authentication; AlterUserScramCredentials refuses more than the maximum.
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384

# A SCRAM message is a few hundred bytes: a user name, two nonces, a salt and a proof.
# Kafka bounds the whole SaslAuthenticate request at sasl.server.max.receive.size (512 KiB)
# before any SCRAM parsing; this tighter bound keeps the parsing (and a fuzzer's inputs)
# small while leaving room for any real user name or extension.
MAX_MESSAGE_BYTES: Final = 64 * 1024

# ScramLoginModule.TOKEN_AUTH_CONFIG: the extension a delegation-token client sends.
TOKEN_AUTH_EXTENSION: Final = "tokenauth"

# Kafka stores iterations as a Java int.
_MAX_INT32: Final = 2**31 - 1


class ScramMechanism(enum.Enum):
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"

    @property
    def mechanism_name(self) -> str:
        return self.value

    @property
    def hash_name(self) -> str:
        """hashlib's name for the mechanism's hash (and HMAC's digest)."""
        return _HASH_NAMES[self]

    @property
    def type_code(self) -> int:
        """KIP-554's mechanism type in AlterUserScramCredentials and
        DescribeUserScramCredentials (0 is UNKNOWN)."""
        return _TYPE_CODES[self]

    @property
    def digest_size(self) -> int:
        return hashlib.new(self.hash_name).digest_size

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism:
        for mechanism in cls:
            if mechanism.value == name:
                return mechanism
        names = ", ".join(m.value for m in cls)
        raise ValueError(f"SASL mechanism {name!r} is not a SCRAM mechanism (supported: {names})")

    @classmethod
    def from_type_code(cls, code: int) -> ScramMechanism:
        for mechanism in cls:
            if _TYPE_CODES[mechanism] == code:
                return mechanism
        raise ValueError(f"Unknown SCRAM mechanism type {code}")


_HASH_NAMES: Final[dict[ScramMechanism, str]] = {
    ScramMechanism.SCRAM_SHA_256: "sha256",
    ScramMechanism.SCRAM_SHA_512: "sha512",
}
_TYPE_CODES: Final[dict[ScramMechanism, int]] = {
    ScramMechanism.SCRAM_SHA_256: 1,
    ScramMechanism.SCRAM_SHA_512: 2,
}


class ScramAuthenticationError(Exception):
    """A failed SCRAM exchange. `str(error)` is what the client may be told (SaslAuthenticate's
    error_message); `reason` says why, for the broker's log, and may name the user."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason if reason is not None else message


def validate_iterations(iterations: int) -> str | None:
    """None if AlterUserScramCredentials accepts the iteration count, else Kafka's error
    message for it (ZkAdminManager: UNACCEPTABLE_CREDENTIAL)."""
    if iterations < MIN_ITERATIONS:
        return "Too few iterations"
    if iterations > MAX_ITERATIONS:
        return "Too many iterations"
    return None


# ---------------------------------------------------------------------------------------
# Credentials


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        # Salt and keys stay out of logs: StoredKey and ServerKey are password equivalents
        # for an offline dictionary attack.
        return f"ScramCredential(iterations={self.iterations})"

    def to_zk(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString: the value of a user's
        `SCRAM-SHA-256` / `SCRAM-SHA-512` config."""
        return (
            f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
            f"server_key={_b64(self.server_key)},iterations={self.iterations}"
        )

    @classmethod
    def from_zk(cls, text: str) -> ScramCredential:
        """Kafka's ScramCredentialUtils.credentialFromString: exactly the four keys, each
        once. ValueError for anything else (without echoing the text: it holds the keys)."""
        fields: dict[str, str] = {}
        for token in text.split(","):
            key, sep, value = token.partition("=")
            if not sep or not key:
                raise ValueError("SCRAM credential is not valid: expected key=value pairs")
            if key in fields:
                raise ValueError(f"SCRAM credential is not valid: {key!r} given twice")
            fields[key] = value
        if set(fields) != _ZK_KEYS:
            raise ValueError(
                "SCRAM credential is not valid: expected exactly salt, stored_key, server_key "
                "and iterations"
            )
        decoded: dict[str, bytes] = {}
        for key in ("salt", "stored_key", "server_key"):
            try:
                raw = _b64decode(fields[key])
            except ValueError:
                raw = b""
            if not raw:
                raise ValueError(f"SCRAM credential is not valid: {key} is not non-empty base64")
            decoded[key] = raw
        iterations_text = fields["iterations"]
        # int() alone would take " 4096", "4_096" and non-ASCII digits.
        if _DIGITS_RE.fullmatch(iterations_text) is None:
            raise ValueError("SCRAM credential is not valid: iterations is not a number")
        iterations = int(iterations_text)
        if not 1 <= iterations <= _MAX_INT32:
            raise ValueError(f"SCRAM credential is not valid: iterations {iterations} out of range")
        return cls(decoded["salt"], decoded["stored_key"], decoded["server_key"], iterations)


_ZK_KEYS: Final = frozenset({"salt", "stored_key", "server_key", "iterations"})
_DIGITS_RE: Final = re.compile(r"[0-9]{1,10}")


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """RFC 5802's SaltedPassword := Hi(password, salt, i), Hi being PBKDF2 with the
    mechanism's HMAC (what ScramFormatter.hi computes by hand)."""
    if iterations < 1:
        raise ValueError(f"iterations must be positive, got {iterations}")
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted_password(
    mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """KIP-554: AlterUserScramCredentials carries the salt and the salted password, never the
    password; the broker derives the keys as ScramFormatter.generateCredential does."""
    if iterations < 1:
        raise ValueError(f"iterations must be positive, got {iterations}")
    client_key = _hmac(mechanism, salted, b"Client Key")
    stored_key = _hash(mechanism, client_key)
    server_key = _hmac(mechanism, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def make_credential(
    mechanism: ScramMechanism,
    password: str,
    *,
    salt: bytes | None = None,
    iterations: int = MIN_ITERATIONS,
) -> ScramCredential:
    """A new credential for a password (kafka-configs' `SCRAM-SHA-256=[password=...]`).

    The default salt is Kafka's ScramFormatter.secureRandomBytes: the UTF-8 bytes of a
    130-bit random number written in base 36 (up to 26 ASCII bytes), so a credential made
    here looks like one Kafka made."""
    if salt is None:
        salt = secure_random_string().encode("ascii")
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted_password(mechanism, salted, salt, iterations)


def secure_random_string() -> str:
    """Kafka's ScramFormatter.secureRandomString: `new BigInteger(130, random).toString(36)`.
    Used for nonces and salts."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out: list[str] = []
    while True:
        value, digit = divmod(value, 36)
        out.append(digits[digit])
        if value == 0:
            return "".join(reversed(out))


# ---------------------------------------------------------------------------------------
# Message syntax (RFC 5802 section 7)

# A nonce: printable ASCII but ','.
_NONCE_RE: Final = re.compile(r"[\x21-\x2b\x2d-\x7e]+")
# saslname: any character but NUL, ',' and '=', or the escapes =2C and =3D. Kafka's
# pattern is ASCII only; RFC 5802 allows UTF-8, and so does minikafka.
_SASLNAME_RE: Final = re.compile(r"(?:[^\x00=,]|=2C|=3D)+")
# An extension (Kafka's ScramMessages: ALPHA "=" VALUE, the name possibly several letters
# as in `tokenauth`).
_EXTENSION_RE: Final = re.compile(r"([A-Za-z]+)=([^\x00,]+)")
_BASE64_RE: Final = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)?")
_GS2_HEADER: Final = "n,,"


def sasl_name(username: str) -> str:
    """ScramFormatter.saslName: ',' and '=' escaped as =2C and =3D."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_from_sasl_name(name: str) -> str | None:
    """ScramFormatter.username: the escapes undone; None if `name` is not a saslname (an
    '=' that is not =2C or =3D, a ',' or a NUL)."""
    if _SASLNAME_RE.fullmatch(name) is None:
        return None
    return name.replace("=2C", ",").replace("=3D", "=")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode(text: str) -> bytes:
    """Strict base64 (standard alphabet, padded), as Kafka's messages require; ValueError
    otherwise."""
    if _BASE64_RE.fullmatch(text) is None:
        raise ValueError("not base64")
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as e:  # pragma: no cover - the pattern already rules these out
        raise ValueError("not base64") from e


def _hmac(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, mechanism.hash_name).digest()


def _hash(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _parse_extensions(fields: list[str]) -> dict[str, str] | None:
    """`name=value` extension fields as a map (a later duplicate wins, as in Kafka's
    Utils.parseMap); None if one is malformed."""
    extensions: dict[str, str] = {}
    for field in fields:
        match = _EXTENSION_RE.fullmatch(field)
        if match is None:
            return None
        extensions[match.group(1)] = match.group(2)
    return extensions


def _decode_message(response: bytes, what: str) -> str:
    """A SCRAM message as text: bounded, UTF-8 and free of NUL (which no SCRAM attribute may
    hold); ValueError otherwise."""
    if not response:
        raise ValueError(f"empty {what}")
    if len(response) > MAX_MESSAGE_BYTES:
        raise ValueError(f"{what} of {len(response)} bytes exceeds {MAX_MESSAGE_BYTES} bytes")
    try:
        text = response.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} is not UTF-8") from e
    if "\x00" in text:
        raise ValueError(f"{what} holds a NUL character")
    return text


# ---------------------------------------------------------------------------------------
# Server


class _ServerState(enum.Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = enum.auto()
    RECEIVE_CLIENT_FINAL_MESSAGE = enum.auto()
    COMPLETE = enum.auto()
    FAILED = enum.auto()


@dataclass(frozen=True)
class _ClientFirst:
    gs2_header: str
    authzid: str
    username: str
    nonce: str
    bare: str
    extensions: dict[str, str]


class ScramServer:
    """One server-side SCRAM exchange, as Kafka's ScramSaslServer.

    `lookup(username)` gives the user's credential for this mechanism, or None for an
    unknown user (Kafka's credential cache, filled from /config/users). `nonce()` gives the
    server's part of the nonce (default: Kafka's secure random string); it must be printable
    ASCII without ','. Every failure raises ScramAuthenticationError and ends the exchange."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        nonce: Callable[[], str] | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._nonce = nonce if nonce is not None else secure_random_string
        self._state = _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE
        self._client_first: _ClientFirst | None = None
        self._server_first: str | None = None
        self._combined_nonce: str | None = None
        self._credential: ScramCredential | None = None
        self._username: str | None = None

    @property
    def complete(self) -> bool:
        return self._state is _ServerState.COMPLETE

    @property
    def username(self) -> str | None:
        """The authenticated user (the principal's name) once complete, else None."""
        return self._username if self.complete else None

    def evaluate(self, response: bytes) -> bytes:
        """The client-first message gives the server-first, the client-final message gives
        the server-final."""
        try:
            if self._state is _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE:
                challenge = self._receive_client_first(response)
                self._state = _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE
            elif self._state is _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE:
                challenge = self._receive_client_final(response)
                self._state = _ServerState.COMPLETE
            else:
                # Kafka's IllegalSaslStateException; like Kafka, the exchange then fails
                # (even a completed one: a client that sends more is not a SCRAM client).
                raise ScramAuthenticationError(
                    f"Unexpected challenge in Sasl server state {self._state.name}"
                )
        except ScramAuthenticationError:
            self._clear()
            self._username = None
            self._state = _ServerState.FAILED
            raise
        return challenge

    def _invalid(self, reason: str) -> ScramAuthenticationError:
        """A failure whose detail the client must not see (Kafka's SaslException)."""
        return ScramAuthenticationError(
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism.mechanism_name}",
            reason,
        )

    def _clear(self) -> None:
        # Kafka's clearCredentials: nothing of the credential outlives the exchange.
        self._client_first = None
        self._server_first = None
        self._combined_nonce = None
        self._credential = None

    def _parse_client_first(self, response: bytes) -> _ClientFirst:
        try:
            text = _decode_message(response, "SCRAM client first message")
        except ValueError as e:
            raise self._invalid(str(e)) from None
        # gs2-header: only "n" (no channel binding), as Kafka: it offers no -PLUS mechanism.
        if text.startswith("p="):
            raise self._invalid("SCRAM channel binding (gs2 flag p=) is not supported")
        if text.startswith("y,"):
            raise self._invalid("SCRAM gs2 flag y is not supported: only n (no channel binding)")
        flag, sep, rest = text.partition(",")
        authz_field, sep2, bare = rest.partition(",")
        if flag != "n" or not sep or not sep2:
            raise self._invalid("Invalid SCRAM client first message format: bad gs2 header")
        authzid = ""
        if authz_field:
            if not authz_field.startswith("a="):
                raise self._invalid("Invalid SCRAM client first message format: bad authzid")
            # Kafka compares the authzid still escaped; RFC 5802 escapes it as a saslname.
            unescaped = username_from_sasl_name(authz_field[2:])
            if unescaped is None:
                raise self._invalid("Invalid SCRAM client first message format: bad authzid")
            authzid = unescaped
        gs2_header = text[: len(text) - len(bare)]
        fields = bare.split(",")
        if fields[0].startswith("m="):
            # RFC 5802: a server that does not know a mandatory extension must fail.
            raise self._invalid("SCRAM mandatory extension (m=) is not supported")
        if len(fields) < 2 or not fields[0].startswith("n=") or not fields[1].startswith("r="):
            raise self._invalid("Invalid SCRAM client first message format: expected n=,r=")
        username = username_from_sasl_name(fields[0][2:])
        if username is None:
            raise self._invalid("Invalid SCRAM client first message format: bad user name")
        nonce = fields[1][2:]
        if _NONCE_RE.fullmatch(nonce) is None:
            raise self._invalid("Invalid SCRAM client first message format: bad nonce")
        extensions = _parse_extensions(fields[2:])
        if extensions is None:
            raise self._invalid("Invalid SCRAM client first message format: bad extension")
        return _ClientFirst(gs2_header, authzid, username, nonce, bare, extensions)

    def _receive_client_first(self, response: bytes) -> bytes:
        first = self._parse_client_first(response)
        # Boolean.parseBoolean: only "true", in any case, asks for token authentication;
        # Kafka ignores every other extension, and so does minikafka.
        if first.extensions.get(TOKEN_AUTH_EXTENSION, "").lower() == "true":
            # Kafka would look the name up as a delegation token id; minikafka has no
            # delegation tokens, and says so (which tells the client nothing of users).
            raise ScramAuthenticationError(
                "Authentication failed: delegation token authentication "
                f"({TOKEN_AUTH_EXTENSION}=true) is not supported",
            )
        try:
            credential = self._lookup(first.username)
        except Exception as e:
            raise self._invalid(
                f"Authentication failed: Credentials could not be obtained for user "
                f"{first.username!r}: {e}"
            ) from e
        if credential is None:
            raise self._invalid(
                f"Authentication failed: Invalid user credentials (unknown user {first.username!r})"
            )
        if first.authzid and first.authzid != first.username:
            raise ScramAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if credential.iterations < MIN_ITERATIONS:
            raise self._invalid(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{MIN_ITERATIONS} for {self.mechanism.mechanism_name}"
            )
        combined = first.nonce + self._nonce()
        server_first = f"r={combined},s={_b64(credential.salt)},i={credential.iterations}"
        self._client_first = first
        self._server_first = server_first
        self._combined_nonce = combined
        self._credential = credential
        return server_first.encode("ascii")

    def _receive_client_final(self, response: bytes) -> bytes:
        first, server_first = self._client_first, self._server_first
        credential, combined = self._credential, self._combined_nonce
        assert first is not None and server_first is not None
        assert credential is not None and combined is not None
        try:
            text = _decode_message(response, "SCRAM client final message")
        except ValueError as e:
            raise self._invalid(str(e)) from None
        fields = text.split(",")
        if (
            len(fields) < 3
            or not fields[0].startswith("c=")
            or not fields[1].startswith("r=")
            or not fields[-1].startswith("p=")
            or _parse_extensions(fields[2:-1]) is None
        ):
            raise self._invalid("Invalid SCRAM client final message format")
        try:
            channel_binding = _b64decode(fields[0][2:])
            proof = _b64decode(fields[-1][2:])
        except ValueError:
            raise self._invalid("Invalid SCRAM client final message format: bad base64") from None
        # No channel binding: c= is the gs2 header itself (c=biws for "n,,").
        if channel_binding != first.gs2_header.encode("utf-8"):
            raise self._invalid("Invalid channel binding in the final client message.")
        # Kafka checks only that the nonce ends with the combined one, and real clients
        # rely on it: librdkafka before 2.1 sends its own nonce again in front of it.
        if not fields[1][2:].endswith(combined):
            raise self._invalid("Invalid client nonce in the final client message.")
        without_proof = text[: len(text) - len(fields[-1]) - 1]
        auth_message = f"{first.bare},{server_first},{without_proof}".encode()
        client_signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise self._invalid("Invalid client credentials")
        # ClientKey = ClientProof XOR ClientSignature; it is right iff H(ClientKey) is the
        # StoredKey. Constant time, so timing tells nothing of how much matched.
        client_key = _xor(proof, client_signature)
        if not hmac.compare_digest(_hash(self.mechanism, client_key), credential.stored_key):
            raise self._invalid("Invalid client credentials")
        server_signature = _hmac(self.mechanism, credential.server_key, auth_message)
        self._username = first.username
        self._clear()
        return f"v={_b64(server_signature)}".encode("ascii")


# ---------------------------------------------------------------------------------------
# Client


class _ClientState(enum.Enum):
    SEND_CLIENT_FIRST_MESSAGE = enum.auto()
    RECEIVE_SERVER_FIRST_MESSAGE = enum.auto()
    RECEIVE_SERVER_FINAL_MESSAGE = enum.auto()
    COMPLETE = enum.auto()
    FAILED = enum.auto()


class ScramClient:
    """The client side of one exchange, as Kafka's ScramSaslClient (no channel binding, no
    extensions). Kafka's client sends no authorization id; `authzid` adds one, which the
    server accepts only if it is the user.

    Kafka's client takes any iteration count the server asks for above the minimum; this one
    also refuses more than `max_iterations` (default Kafka's MAX_ITERATIONS), so that a
    rogue server cannot make it spin."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce: str | None = None,
        *,
        authzid: str = "",
        max_iterations: int = MAX_ITERATIONS,
    ) -> None:
        if nonce is not None and _NONCE_RE.fullmatch(nonce) is None:
            raise ValueError("a SCRAM nonce is printable ASCII without ','")
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._nonce = nonce if nonce is not None else secure_random_string()
        self._max_iterations = max_iterations
        self._gs2_header = f"n,a={sasl_name(authzid)}," if authzid else _GS2_HEADER
        self._state = _ClientState.SEND_CLIENT_FIRST_MESSAGE
        self._client_first_bare = ""
        self._expected_server_signature: bytes | None = None

    def __repr__(self) -> str:
        return f"ScramClient({self.mechanism.mechanism_name}, user={self._username!r})"

    @property
    def complete(self) -> bool:
        return self._state is _ClientState.COMPLETE

    def _expect(self, state: _ClientState) -> None:
        if self._state is not state:
            self._fail(f"Unexpected challenge in Sasl client state {self._state.name}")

    def _fail(self, message: str) -> NoReturn:
        self._state = _ClientState.FAILED
        self._expected_server_signature = None
        raise ScramAuthenticationError(message)

    def first_message(self) -> bytes:
        self._expect(_ClientState.SEND_CLIENT_FIRST_MESSAGE)
        self._client_first_bare = f"n={sasl_name(self._username)},r={self._nonce}"
        self._state = _ClientState.RECEIVE_SERVER_FIRST_MESSAGE
        return (self._gs2_header + self._client_first_bare).encode("utf-8")

    def final_message(self, server_first: bytes) -> bytes:
        self._expect(_ClientState.RECEIVE_SERVER_FIRST_MESSAGE)
        try:
            text = _decode_message(server_first, "SCRAM server first message")
        except ValueError as e:
            self._fail(f"Invalid SCRAM server first message format: {e}")
        fields = text.split(",")
        if fields[0].startswith("m="):
            self._fail("SCRAM mandatory extension (m=) is not supported")
        if (
            len(fields) < 3
            or not fields[0].startswith("r=")
            or not fields[1].startswith("s=")
            or not fields[2].startswith("i=")
            or _parse_extensions(fields[3:]) is None
            or _NONCE_RE.fullmatch(fields[0][2:]) is None
            or _DIGITS_RE.fullmatch(fields[2][2:]) is None
        ):
            self._fail("Invalid SCRAM server first message format")
        nonce = fields[0][2:]
        try:
            salt = _b64decode(fields[1][2:])
        except ValueError:
            self._fail("Invalid SCRAM server first message format: bad salt")
        iterations = int(fields[2][2:])
        # The server appends its own nonce to the client's.
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            self._fail("Invalid server nonce: does not start with client nonce")
        if iterations < MIN_ITERATIONS:
            self._fail(
                f"Requested iterations {iterations} is less than the minimum "
                f"{MIN_ITERATIONS} for {self.mechanism.mechanism_name}"
            )
        if iterations > self._max_iterations:
            self._fail(
                f"Requested iterations {iterations} is more than the maximum "
                f"{self._max_iterations} for {self.mechanism.mechanism_name}"
            )
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        without_proof = f"c={_b64(self._gs2_header.encode('utf-8'))},r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        stored_key = _hash(self.mechanism, client_key)
        proof = _xor(client_key, _hmac(self.mechanism, stored_key, auth_message))
        server_key = _hmac(self.mechanism, salted, b"Server Key")
        self._expected_server_signature = _hmac(self.mechanism, server_key, auth_message)
        self._state = _ClientState.RECEIVE_SERVER_FINAL_MESSAGE
        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def verify_server_final(self, server_final: bytes) -> None:
        """Checks the server's signature: a server that does not know the credential cannot
        forge it. ScramAuthenticationError for a wrong signature or an `e=` error."""
        self._expect(_ClientState.RECEIVE_SERVER_FINAL_MESSAGE)
        expected = self._expected_server_signature
        assert expected is not None
        try:
            text = _decode_message(server_final, "SCRAM server final message")
        except ValueError as e:
            self._fail(f"Invalid SCRAM server final message format: {e}")
        fields = text.split(",")
        if fields[0].startswith("e=") and len(fields[0]) > 2:
            self._fail(
                f"Sasl authentication using {self.mechanism.mechanism_name} failed with "
                f"error: {fields[0][2:]}"
            )
        if not fields[0].startswith("v=") or _parse_extensions(fields[1:]) is None:
            self._fail("Invalid SCRAM server final message format")
        try:
            signature = _b64decode(fields[0][2:])
        except ValueError:
            self._fail("Invalid SCRAM server final message format: bad signature")
        if not hmac.compare_digest(signature, expected):
            self._fail("Invalid server signature in server final message")
        self._expected_server_signature = None
        self._state = _ClientState.COMPLETE

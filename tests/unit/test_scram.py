"""SASL/SCRAM as Kafka's ScramSaslServer runs it: RFC 7677's test vector, credentials in
Kafka's ZooKeeper format, KIP-554's derivation, and every way an exchange must fail, with
only ScramAuthenticationError escaping the server whatever the client sends."""

from __future__ import annotations

import base64
import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.security.scram import (
    MAX_ITERATIONS,
    MAX_MESSAGE_BYTES,
    MIN_ITERATIONS,
    ScramAuthenticationError,
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    credential_from_salted_password,
    make_credential,
    salted_password,
    validate_iterations,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3.
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

# The RFC's credential as the broker keeps it in ZooKeeper (the keys are checked by the
# exchange in test_rfc7677_server_from_the_zookeeper_string).
RFC_ZK = (
    "salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=,"
    "server_key=wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=,iterations=4096"
)

RFC_CREDENTIAL = make_credential(SHA256, "pencil", salt=RFC_SALT, iterations=4096)
GENERIC_FAILURE = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-256"
)


def rfc_server(credential: ScramCredential = RFC_CREDENTIAL) -> ScramServer:
    return ScramServer(
        SHA256, lambda user: credential if user == "user" else None, nonce=lambda: RFC_SERVER_NONCE
    )


def exchange(server: ScramServer, client: ScramClient) -> None:
    server_first = server.evaluate(client.first_message())
    server_final = server.evaluate(client.final_message(server_first))
    client.verify_server_final(server_final)


# --- mechanisms -------------------------------------------------------------------------


def test_mechanisms_as_kafka_names_and_numbers_them() -> None:
    assert SHA256.mechanism_name == "SCRAM-SHA-256" and SHA256.hash_name == "sha256"
    assert SHA512.mechanism_name == "SCRAM-SHA-512" and SHA512.hash_name == "sha512"
    assert (SHA256.type_code, SHA512.type_code) == (1, 2)
    assert ScramMechanism.from_name("SCRAM-SHA-512") is SHA512
    assert ScramMechanism.from_type_code(1) is SHA256
    assert (MIN_ITERATIONS, MAX_ITERATIONS) == (4096, 16384)
    with pytest.raises(ValueError, match="PLAIN"):
        ScramMechanism.from_name("PLAIN")
    with pytest.raises(ValueError, match="0"):
        ScramMechanism.from_type_code(0)


def test_alter_user_scram_credentials_iteration_bounds() -> None:
    assert validate_iterations(4095) == "Too few iterations"
    assert validate_iterations(16385) == "Too many iterations"
    assert validate_iterations(4096) is None and validate_iterations(16384) is None


# --- RFC 7677 ---------------------------------------------------------------------------


def test_rfc7677_server_side() -> None:
    server = rfc_server()
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert (server.complete, server.username) == (False, None)
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert (server.complete, server.username) == (True, "user")


def test_rfc7677_client_side() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first_message() == RFC_CLIENT_FIRST
    assert client.final_message(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify_server_final(RFC_SERVER_FINAL)
    assert client.complete


def test_rfc7677_server_from_the_zookeeper_string() -> None:
    assert RFC_CREDENTIAL.to_zk() == RFC_ZK
    server = rfc_server(ScramCredential.from_zk(RFC_ZK))
    server.evaluate(RFC_CLIENT_FIRST)
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_round_trip(mechanism: ScramMechanism) -> None:
    credential = make_credential(mechanism, "alice-secret", iterations=8192)
    server = ScramServer(mechanism, {"alice": credential}.get)
    client = ScramClient(mechanism, "alice", "alice-secret")
    exchange(server, client)
    assert server.complete and client.complete and server.username == "alice"


def test_escaped_user_names() -> None:
    # ',' and '=' travel as =2C and =3D (ScramFormatter.saslName).
    credential = make_credential(SHA512, "pw")
    seen: list[str] = []

    def lookup(user: str) -> ScramCredential | None:
        seen.append(user)
        return credential

    server = ScramServer(SHA512, lookup)
    client = ScramClient(SHA512, "a,b=c", "pw")
    first = client.first_message()
    assert b"n=a=2Cb=3Dc," in first
    client.verify_server_final(server.evaluate(client.final_message(server.evaluate(first))))
    assert seen == ["a,b=c"] and server.username == "a,b=c"
    # And a non-ASCII name (RFC 5802 allows UTF-8; Kafka's pattern is ASCII only).
    server = ScramServer(SHA512, {"josé": credential}.get)
    exchange(server, ScramClient(SHA512, "josé", "pw"))
    assert server.username == "josé"


@pytest.mark.parametrize("name", [b"a=2Db", b"a=b", b"a=", b"a=2c"])
def test_invalid_escapes_are_refused(name: bytes) -> None:
    server = ScramServer(SHA256, lambda user: RFC_CREDENTIAL)
    with pytest.raises(ScramAuthenticationError):
        server.evaluate(b"n,,n=" + name + b",r=abc")


# --- credentials ------------------------------------------------------------------------


def test_zookeeper_string_round_trip() -> None:
    credential = make_credential(SHA512, "password")
    assert ScramCredential.from_zk(credential.to_zk()) == credential


def test_a_credential_kafka_wrote_to_zookeeper() -> None:
    # From a /config/users/<user> znode: Kafka's salt is a base-36 random string's bytes.
    text = (
        "salt=MTcxbDF6aGNxOWgwajB2ZG1uOW83c3h6bm4=,"
        "stored_key=cmc413tGXiD7hFkdZHiVS7WzAUsC+mRQGyazJnC7S4a/w8ZrFuk/0cCsVtvWT13qob3QKJpk"
        "/pdWq2ODRMQEHw==,"
        "server_key=bcXtlsvRZGNqRBUai1TLWe2BIsOLHhTrunVt1OciDRvX2ZccDxFP7uxVZAa8NAInMkciqFyZB6"
        "KS9SxfX1XBug==,iterations=4096"
    )
    credential = ScramCredential.from_zk(text)
    assert credential.salt == b"171l1zhcq9h0j0vdmn9o7sxznn"
    assert len(credential.stored_key) == len(credential.server_key) == SHA512.digest_size
    assert credential.iterations == 4096
    assert credential.to_zk() == text


def test_kafka_derives_the_same_keys() -> None:
    # A credential Kafka made for "admin-secret" (salt from ScramFormatter.secureRandomBytes).
    credential = make_credential(SHA256, "admin-secret", salt=b"2z6zo9xma93c5art4afp5tubr")
    assert credential.to_zk() == (
        "salt=Mno2em85eG1hOTNjNWFydDRhZnA1dHVicg==,"
        "stored_key=S/mR1wYGMoSUC7Av4Kqbuiit96ZTeXGsfZuR7cUfbxM=,"
        "server_key=Ap6C1LoBF0qOOvYulwH5f3oog1VlsxF4fosugF+lTVQ=,iterations=4096"
    )


def test_default_salt_is_kafkas_random_string() -> None:
    a, b = make_credential(SHA256, "pw"), make_credential(SHA256, "pw")
    assert a.salt != b.salt and a.to_zk() != b.to_zk()
    assert 1 <= len(a.salt) <= 26 and a.salt.decode("ascii").isalnum()


def test_kip554_derivation_agrees_with_make_credential() -> None:
    for mechanism in ScramMechanism:
        salt = b"some-salt"
        salted = salted_password(mechanism, "secret", salt, 5000)
        derived = credential_from_salted_password(mechanism, salted, salt, 5000)
        assert derived == make_credential(mechanism, "secret", salt=salt, iterations=5000)


def test_repr_shows_no_key_material() -> None:
    text = repr(RFC_CREDENTIAL)
    assert "4096" in text
    for secret in (RFC_CREDENTIAL.salt, RFC_CREDENTIAL.stored_key, RFC_CREDENTIAL.server_key):
        assert repr(secret) not in text and base64.b64encode(secret).decode() not in text
    assert "pencil" not in repr(ScramClient(SHA256, "user", "pencil"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        RFC_ZK[RFC_ZK.index(",") :],  # missing salt (Kafka's missingFields)
        RFC_ZK + ",a=test",  # extraneous field
        RFC_ZK + ",salt=abcd",  # a key twice
        RFC_ZK.replace("iterations=4096", "iterations=-1"),
        RFC_ZK.replace("iterations=4096", "iterations=0"),
        RFC_ZK.replace("iterations=4096", "iterations=4_096"),
        RFC_ZK.replace("iterations=4096", "iterations=99999999999"),
        RFC_ZK.replace("salt=W22ZaJ0SNY7soEsUEjb6gQ==", "salt=W22ZaJ0SNY7soEsUEjb6gQ"),
        RFC_ZK.replace("salt=W22ZaJ0SNY7soEsUEjb6gQ==", "salt="),
        RFC_ZK.replace("stored_key=", "stored_key=!"),
        RFC_ZK + ",",
    ],
)
def test_malformed_zookeeper_strings(text: str) -> None:
    with pytest.raises(ValueError):
        ScramCredential.from_zk(text)


# --- failures ---------------------------------------------------------------------------


def test_wrong_password() -> None:
    server = rfc_server()
    client = ScramClient(SHA256, "user", "pencil!")
    server_first = server.evaluate(client.first_message())
    with pytest.raises(ScramAuthenticationError) as e:
        server.evaluate(client.final_message(server_first))
    assert str(e.value) == GENERIC_FAILURE
    assert e.value.reason == "Invalid client credentials"
    assert not server.complete and server.username is None


def test_unknown_user_fails_at_the_first_message() -> None:
    server = rfc_server()
    with pytest.raises(ScramAuthenticationError) as e:
        server.evaluate(b"n,,n=mallory,r=abc")
    # The client is not told whether the user exists; the broker's log is.
    assert str(e.value) == GENERIC_FAILURE
    assert "Invalid user credentials" in e.value.reason and "mallory" in e.value.reason


def test_lookup_errors_become_authentication_errors() -> None:
    def lookup(user: str) -> ScramCredential | None:
        raise RuntimeError("cache not ready")

    with pytest.raises(ScramAuthenticationError) as e:
        ScramServer(SHA256, lookup).evaluate(RFC_CLIENT_FIRST)
    assert "Credentials could not be obtained" in e.value.reason


def test_credential_with_too_few_iterations() -> None:
    weak = make_credential(SHA256, "pencil", iterations=1024)
    with pytest.raises(ScramAuthenticationError) as e:
        rfc_server(weak).evaluate(RFC_CLIENT_FIRST)
    assert "less than the minimum 4096" in e.value.reason


@pytest.mark.parametrize(
    "final",
    [
        # The server's part of the nonce is missing, or the nonce does not end with the
        # combined one. (Something in front of it is Kafka's leniency: librdkafka before
        # 2.1 repeats its own nonce there, and kcat's tests in tests/security rely on it.)
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    ],
)
def test_bad_nonce(final: bytes) -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(ScramAuthenticationError) as e:
        server.evaluate(final)
    assert "nonce" in e.value.reason


def test_client_refuses_a_server_nonce_that_does_not_extend_its_own() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    with pytest.raises(ScramAuthenticationError, match="nonce"):
        client.final_message(b"r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


@pytest.mark.parametrize("binding", [b"c=eSws", b"c=", b"c=bixh", b"c=biws=", b"c=biwsbiws"])
def test_bad_channel_binding(binding: bytes) -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(ScramAuthenticationError):
        server.evaluate(RFC_CLIENT_FINAL.replace(b"c=biws", binding))


@pytest.mark.parametrize(
    "first",
    [
        b"y,,n=user,r=abc",  # client supports channel binding
        b"p=tls-unique,,n=user,r=abc",  # client requires it
        b"n,,m=ext,n=user,r=abc",  # mandatory extension
        b"n,,n=user",
        b"n,,r=abc,n=user",
        b"n,n=user,r=abc",
        b"n,,n=,r=abc",
        b"n,,n=user,r=",
        b"n,,n=user,r=a\x7fb",
        b"n,,n=user,r=abc,",
        b"n,,n=user,r=abc,1=x",
        b"n,,n=user,r=abc,x=",
        b"n,,n=us\x00er,r=abc",
        b"n,,n=user,r=abc\xff",
        b"",
    ],
)
def test_malformed_client_first(first: bytes) -> None:
    with pytest.raises(ScramAuthenticationError) as e:
        rfc_server().evaluate(first)
    assert str(e.value) == GENERIC_FAILURE


def test_oversized_messages_are_refused() -> None:
    first = b"n,,n=user,r=" + b"a" * MAX_MESSAGE_BYTES
    with pytest.raises(ScramAuthenticationError) as e:
        rfc_server().evaluate(first)
    assert "exceeds" in e.value.reason


def test_authzid() -> None:
    # An authzid equal to the user is accepted (its gs2 header is then the channel binding).
    server = rfc_server()
    server_first = server.evaluate(b"n,a=user,n=user,r=abc").decode()
    nonce = server_first.split(",")[0][2:]
    assert nonce.startswith("abc")
    # Another user's authzid is refused, with Kafka's text (a SaslAuthenticationException,
    # which the client sees).
    with pytest.raises(ScramAuthenticationError) as e:
        rfc_server().evaluate(b"n,a=admin,n=user,r=abc")
    assert str(e.value) == (
        "Authentication failed: Client requested an authorization id that is different from "
        "username"
    )
    # The authzid is a saslname, escaped as the user name is.
    credential = make_credential(SHA256, "pw")
    server = ScramServer(SHA256, {"a,b": credential}.get)
    server.evaluate(b"n,a=a=2Cb,n=a=2Cb,r=abc")
    with pytest.raises(ScramAuthenticationError):
        ScramServer(SHA256, {"a,b": credential}.get).evaluate(b"n,a=a=2Cc,n=a=2Cb,r=abc")


def test_authzid_exchange() -> None:
    credential = make_credential(SHA256, "pw")
    server = ScramServer(SHA256, {"a,b": credential}.get)
    client = ScramClient(SHA256, "a,b", "pw", authzid="a,b")
    first = client.first_message()
    assert first.startswith(b"n,a=a=2Cb,n=a=2Cb,r=")
    # The final message binds the gs2 header "n,a=a=2Cb," in c=.
    final = client.final_message(server.evaluate(first))
    assert final.startswith(b"c=" + base64.b64encode(b"n,a=a=2Cb,"))
    client.verify_server_final(server.evaluate(final))
    assert server.username == "a,b"

    # A proof made for another gs2 header (c=biws for "n,,") is refused.
    server = ScramServer(SHA256, {"bob": credential}.get, nonce=lambda: "srv")
    client = ScramClient(SHA256, "bob", "pw", nonce="cli")
    client.first_message()
    server_first = server.evaluate(b"n,a=bob,n=bob,r=cli")
    with pytest.raises(ScramAuthenticationError) as e:
        server.evaluate(client.final_message(server_first))
    assert "channel binding" in e.value.reason


def test_tokenauth_is_refused_with_a_clear_message() -> None:
    for value in (b"true", b"TRUE"):
        with pytest.raises(ScramAuthenticationError) as e:
            rfc_server().evaluate(b"n,,n=user,r=abc,tokenauth=" + value)
        assert "delegation token" in str(e.value)


def test_unknown_extensions_are_ignored() -> None:
    # Kafka ignores extensions it does not know, and tokenauth=false asks for nothing.
    server = rfc_server()
    first = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO,tokenauth=false,foo=bar=baz"
    server_first = server.evaluate(first)
    assert server_first == RFC_SERVER_FIRST


def test_out_of_order_calls() -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    server.evaluate(RFC_CLIENT_FINAL)
    with pytest.raises(ScramAuthenticationError, match="state COMPLETE"):
        server.evaluate(RFC_CLIENT_FINAL)
    # As in Kafka, the exchange is then failed.
    assert not server.complete and server.username is None

    failed = rfc_server()
    with pytest.raises(ScramAuthenticationError):
        failed.evaluate(b"garbage")
    with pytest.raises(ScramAuthenticationError, match="state FAILED"):
        failed.evaluate(RFC_CLIENT_FIRST)

    # A client-final message first is just a malformed client-first.
    with pytest.raises(ScramAuthenticationError):
        rfc_server().evaluate(RFC_CLIENT_FINAL)


def test_client_state_and_server_errors() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    with pytest.raises(ScramAuthenticationError, match="state"):
        client.final_message(RFC_SERVER_FIRST)

    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    with pytest.raises(ScramAuthenticationError, match="failed with error: other-error"):
        client.verify_server_final(b"e=other-error")
    assert not client.complete

    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    with pytest.raises(ScramAuthenticationError, match="Invalid server signature"):
        client.verify_server_final(b"v=" + base64.b64encode(b"\x00" * 32))


@pytest.mark.parametrize(
    "server_first",
    [
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1024",
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000000000",
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ=,i=4096",
        b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        b"m=x,r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==",
        b"",
    ],
)
def test_client_refuses_bad_server_first(server_first: bytes) -> None:
    # Too few or (a rogue server making the client spin) too many iterations included.
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    with pytest.raises(ScramAuthenticationError):
        client.final_message(server_first)


# --- fuzzing ----------------------------------------------------------------------------

FUZZ_BYTES = b",=nrcpaemyi2C3D\x00\xff"


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """`original` with a few bytes flipped, inserted, deleted or cut off."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(
                st.binary(max_size=3) | st.sampled_from(list(FUZZ_BYTES)).map(lambda b: bytes([b]))
            )
        elif kind == "delete" and data:
            del data[pos]
        elif kind == "truncate":
            del data[pos:]
    return bytes(data)


def evaluate_or_refuse(server: ScramServer, message: bytes) -> bytes | None:
    try:
        return server.evaluate(message)
    except ScramAuthenticationError:
        return None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=200))
def test_fuzz_arbitrary_bytes(first: bytes, final: bytes) -> None:
    # Any user name gets a credential: garbage reaches as deep into the exchange as it can.
    server = ScramServer(SHA256, lambda user: RFC_CREDENTIAL)
    evaluate_or_refuse(server, first)
    evaluate_or_refuse(server, final)
    assert not server.complete


# Messages shaped like SCRAM's, mostly well formed, to reach the proof check rather than
# stop at the syntax checks as random bytes do.
def mostly(usual: bytes, *others: bytes) -> st.SearchStrategy[bytes]:
    return st.sampled_from([usual] * 4 + list(others))


def mostly_like(usual: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """`usual` three times in four, else any text (random bytes are test_fuzz_arbitrary_bytes')."""
    return st.one_of(usual, usual, usual, st.text(max_size=6).map(str.encode))


CLIENT_FIRST_LIKE = st.builds(
    lambda *parts: b"".join(parts),
    mostly(b"n", b"y", b"p=x", b""),
    mostly(b",,", b",a=user,", b",a=x=2Cy,", b",a=,", b","),
    mostly(b"", b"m=x,"),
    mostly(b"n=", b"r=", b""),
    mostly_like(st.from_regex(rb"\A[a-z]{1,5}(=2C|=3D)?\Z")),
    mostly(b",r="),
    mostly_like(st.from_regex(rb"\A[!-+\--~]{1,6}\Z")),
    mostly_like(st.from_regex(rb"\A(,[a-z]{1,9}=[a-z=]{1,5})*\Z")),
)
BASE64_TEXT = st.binary(max_size=70).map(base64.b64encode) | st.from_regex(
    rb"\A[A-Za-z0-9+/=]{0,48}\Z"
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_shaped_messages(data: st.DataObject) -> None:
    server = ScramServer(SHA256, lambda user: RFC_CREDENTIAL, nonce=lambda: "srv")
    first = data.draw(CLIENT_FIRST_LIKE)
    server_first = evaluate_or_refuse(server, first)
    if server_first is None:
        return
    combined = server_first.split(b",")[0][2:]
    gs2_header = first[: first.index(b",", 2) + 1]
    channel = data.draw(mostly(base64.b64encode(gs2_header), b"biws") | BASE64_TEXT)
    nonce = data.draw(mostly(combined) | st.binary(max_size=8))
    extensions = data.draw(mostly(b"") | st.from_regex(rb"\A(,[a-z]{1,3}=[a-z]{1,3})*\Z"))
    proof = data.draw(BASE64_TEXT)
    evaluate_or_refuse(server, b"c=" + channel + b",r=" + nonce + extensions + b",p=" + proof)
    assert not server.complete and server.username is None


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_mutated_client_first(data: st.DataObject) -> None:
    message = data.draw(mutated(RFC_CLIENT_FIRST))
    server = rfc_server()
    server_first = evaluate_or_refuse(server, message)
    if server_first is not None and server_first.startswith(b"r=" + RFC_CLIENT_NONCE.encode()):
        # The honest client's proof covers its own first message, not the mutated one.
        evaluate_or_refuse(server, RFC_CLIENT_FINAL)
    assert not server.complete or message == RFC_CLIENT_FIRST


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_mutated_client_final(data: st.DataObject) -> None:
    message = data.draw(mutated(RFC_CLIENT_FINAL))
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    evaluate_or_refuse(server, message)
    if server.complete:
        # Only the right proof completes: the same message, or the same proof written
        # with other (ignored) trailing base64 bits.
        head, _, proof = message.rpartition(b",p=")
        real_head, _, real_proof = RFC_CLIENT_FINAL.rpartition(b",p=")
        assert head == real_head
        assert base64.b64decode(proof) == base64.b64decode(real_proof)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=120) | st.sampled_from([RFC_ZK]))
def test_fuzz_from_zk_raises_only_value_error(text: str) -> None:
    try:
        credential = ScramCredential.from_zk(text)
    except ValueError:
        return
    assert credential.iterations >= 1 and credential.salt


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_mutated_zookeeper_strings(data: st.DataObject) -> None:
    text = data.draw(mutated(RFC_ZK.encode())).decode("utf-8", "replace")
    with contextlib.suppress(ValueError):
        ScramCredential.from_zk(text)

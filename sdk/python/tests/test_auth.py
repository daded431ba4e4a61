"""Tokens, a wrong token, TLS and mutual TLS against the real hub."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable, Dict

import grpc
import pytest

import hubd

from .conftest import TOKENS, Hub, Serving, transcript

HubFactory = Callable[..., Hub]


def test_token(token_hub: Hub, serving: Serving) -> None:
    # A token alone names the agent; a name may be given for serve.
    alice = hubd.Client(token_hub.addr, token=TOKENS["alice"])
    bob = hubd.Client(token_hub.addr, name="bob", token=TOKENS["bob"])
    serving.start(bob, lambda t: "hi from bob")
    s = alice.open_workflow(hubd.sequence("bob"), "bob")
    assert s.creator == "alice"
    assert transcript(alice, s.id) == (["bob: hi from bob"], "sequence_complete")
    op = hubd.Client(token_hub.addr, token=TOKENS["op"])
    assert s.id in [x.id for x in op.list_sessions().sessions]  # an operator sees all
    serving.close()
    for c in (alice, bob, op):
        c.close()


def test_wrong_token(token_hub: Hub) -> None:
    c = hubd.Client(token_hub.addr, name="alice", token="not-the-token-of-alice")
    with pytest.raises(hubd.Unauthenticated) as e:
        c.list_sessions()
    assert e.value.reason == "UNAUTHENTICATED" and e.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert "unknown token" in e.value.detail and not e.value.retryable
    # serve gives up at once: reconnecting would not help.
    with pytest.raises(hubd.Unauthenticated):
        c.serve(lambda t: None, handle_signals=False)
    # A name without a token is not enough on a hub with tokens.
    anon = hubd.Client(token_hub.addr, name="alice")
    with pytest.raises(hubd.Unauthenticated):
        anon.get_session("01900000-0000-7000-8000-000000000000")
    c.close()
    anon.close()


def test_aio_wrong_token(token_hub: Hub) -> None:
    import asyncio

    async def main() -> None:
        async with hubd.aio.Client(token_hub.addr, token="not-the-token-of-alice") as c:
            with pytest.raises(hubd.Unauthenticated):
                await c.list_sessions()
            with pytest.raises(hubd.Unauthenticated):
                await c.serve(lambda t: None, handle_signals=False)

    asyncio.run(main())


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """A CA, a server certificate for localhost and 127.0.0.1, and client
    certificates for "carol" (by the CA) and "eve" (self-signed)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("certs")
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(
        "req",
        "-x509",
        *key,
        "-keyout",
        str(d / "ca.key"),
        "-out",
        str(d / "ca.pem"),
        "-days",
        "2",
        "-subj",
        "/CN=hubd test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )

    def leaf(name: str, cn: str, ext: str) -> None:
        (d / f"{name}.ext").write_text(ext)
        openssl("req", *key, "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"), "-subj", f"/CN={cn}")
        openssl(
            "x509",
            "-req",
            "-in",
            str(d / f"{name}.csr"),
            "-CA",
            str(d / "ca.pem"),
            "-CAkey",
            str(d / "ca.key"),
            "-CAcreateserial",
            "-out",
            str(d / f"{name}.pem"),
            "-days",
            "2",
            "-extfile",
            str(d / f"{name}.ext"),
        )

    leaf("server", "localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    leaf("carol", "carol", "extendedKeyUsage=clientAuth\n")
    openssl(
        "req",
        "-x509",
        *key,
        "-keyout",
        str(d / "eve.key"),
        "-out",
        str(d / "eve.pem"),
        "-days",
        "2",
        "-subj",
        "/CN=eve",
    )
    return {p.stem + p.suffix.replace(".", "_"): p for p in d.iterdir()}


def test_tls_with_token(hub_factory: HubFactory, certs: Dict[str, Path], tokens_file: Path) -> None:
    h = hub_factory(
        "--tls-cert", str(certs["server_pem"]), "--tls-key", str(certs["server_key"]), "--tokens", str(tokens_file)
    )
    tls = hubd.TLS.from_files(ca=certs["ca_pem"], server_name="localhost")
    with hubd.Client(h.addr, token=TOKENS["alice"], tls=tls) as alice:
        s = alice.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("bob"))
        assert s.creator == "alice"
    # Plaintext to a TLS hub, or TLS without its CA, does not connect.
    with pytest.raises(hubd.Unavailable):
        hubd.Client(h.addr, token=TOKENS["alice"], connect_timeout=0.5)
    with pytest.raises(hubd.Unavailable):
        hubd.Client(
            h.addr,
            token=TOKENS["alice"],
            tls=hubd.TLS(ca=certs["eve_pem"].read_bytes(), server_name="localhost"),
            connect_timeout=0.5,
        )


def test_mutual_tls(hub_factory: HubFactory, certs: Dict[str, Path]) -> None:
    h = hub_factory(
        "--tls-cert",
        str(certs["server_pem"]),
        "--tls-key",
        str(certs["server_key"]),
        "--client-ca",
        str(certs["ca_pem"]),
    )
    tls = hubd.TLS.from_files(
        ca=certs["ca_pem"], cert=certs["carol_pem"], key=certs["carol_key"], server_name="localhost"
    )
    with hubd.Client(h.addr, tls=tls) as carol:  # the certificate names the agent
        s = carol.open(hubd.TYPE_CONVERSATION, participants=hubd.auto_accepted("dave"))
        assert s.creator == "carol"
        carol.send_text(s.id, "hello over mTLS")
        assert [hubd.sender(e) for e in carol.read_log(s.id) if hubd.is_turn(e)] == ["carol"]
    eve = hubd.TLS.from_files(ca=certs["ca_pem"], cert=certs["eve_pem"], key=certs["eve_key"], server_name="localhost")
    with pytest.raises(hubd.Unavailable):  # a certificate the hub's CA did not sign
        with hubd.Client(h.addr, tls=eve, connect_timeout=0.5) as c:
            c.list_sessions(timeout=2)

"""Fixtures: the real hubd binary, built once, run on free loopback ports.

The binary is built from the repository root (``go build -o <tmp>/hubd
./cmd/hubd``) unless HUBD_BIN names one. Every hub runs on a free loopback
port with a temporary data directory; tests that restart a hub get their
own (``hub_factory``), the others share one development-mode hub (``hub``)
and keep out of each other's way by agent names unique to the test
(``names``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest

SDK = Path(__file__).resolve().parents[1]
REPO = SDK.parents[1]
sys.path.insert(0, str(SDK))

import hubd  # noqa: E402

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789", "op": "op-token-0123456789"}
# The agents that take sessions from anyone on a hub with tokens or
# certificates (its --auto-accept-from file).
CONSENTING = ["alice", "bob", "carol", "dave", "op"]
MAX_ENVELOPE_BYTES = 8192
MAX_OPEN_PER_AGENT = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Hub:
    """A hubd process on a loopback port with its own data directory, which
    a test may kill -9, stop gracefully and restart on the same port and
    data."""

    def __init__(self, binary: Path, data: Path, args: List[str]) -> None:
        self.binary = binary
        self.data = data
        self.args = args
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.log = data.with_suffix(".log")

    def start(self) -> "Hub":
        cmd = [
            str(self.binary),
            "serve",
            "--listen",
            self.addr,
            "--data",
            str(self.data),
            "--log-level",
            "warn",
            *self.args,
        ]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hubd exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"hubd did not listen on {self.addr}:\n{self.log.read_text()}")

    def kill(self) -> None:
        """kill -9: no drain, no goodbye."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM: the hub drains its streams and stops."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def restart(self) -> "Hub":
        return self.start()


@pytest.fixture(scope="session")
def hubd_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hubd binary: $HUBD_BIN, or built once from the repository."""
    given = os.environ.get("HUBD_BIN")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("bin") / "hubd"
    go = shutil.which("go") or "/usr/local/go/bin/go"
    env = dict(os.environ)
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false").strip()
    res = subprocess.run([go, "build", "-o", str(out), "./cmd/hubd"], cwd=REPO, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        pytest.exit(f"go build ./cmd/hubd failed:\n{res.stderr}", returncode=1)
    return out


@pytest.fixture(scope="session")
def hub_factory(hubd_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Hub]]:
    """Starts hubs (stopped at the end of the session): ``hub_factory(*args)``."""
    hubs: List[Hub] = []
    counter = itertools.count()

    def start(*args: str) -> Hub:
        data = tmp_path_factory.mktemp("hub") / f"data{next(counter)}"
        args = list(args)
        if "--tokens" in args or "--client-ca" in args:
            # With tokens or certificates, auto_accept needs the invitee's
            # consent: the tests' agents take sessions from anyone.
            consent = data.parent / "consent"
            consent.write_text("".join(f"{n} *\n" for n in CONSENTING))
            args += ["--auto-accept-from", str(consent)]
        h = Hub(hubd_bin, data, args).start()
        hubs.append(h)
        return h

    yield start
    for h in hubs:
        if h.proc is not None and h.proc.poll() is None:
            h.proc.kill()
            h.proc.wait()


@pytest.fixture(scope="session")
def hub(hub_factory: Callable[..., Hub]) -> Hub:
    """The shared development-mode hub (small envelope and open limits so
    that TOO_LARGE and LIMIT_REACHED can be provoked)."""
    return hub_factory("--max-envelope-bytes", str(MAX_ENVELOPE_BYTES), "--max-open-per-agent", str(MAX_OPEN_PER_AGENT))


@pytest.fixture(scope="session")
def tokens_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("tokens") / "tokens"
    p.write_text("".join(f"{n} {t}{' operator' if n == 'op' else ''}\n" for n, t in TOKENS.items()))
    return p


@pytest.fixture(scope="session")
def token_hub(hub_factory: Callable[..., Hub], tokens_file: Path) -> Hub:
    """A hub that knows agents by their bearer tokens (TOKENS)."""
    return hub_factory("--tokens", str(tokens_file))


_unique = itertools.count(1)


class Names:
    """Agent names unique to one test: ``names("alice")`` is the same name
    for the whole test, and no other test's."""

    def __init__(self) -> None:
        self.n = next(_unique)

    def __call__(self, base: str) -> str:
        return f"{base}-{self.n}"


@pytest.fixture
def names() -> Names:
    return Names()


@pytest.fixture
def connect(hub: Hub) -> Iterator[Callable[..., hubd.Client]]:
    """Connects to the shared hub as a name (closed after the test)."""
    clients: List[hubd.Client] = []

    def dial(name: str, addr: Optional[str] = None, **kw: object) -> hubd.Client:
        c = hubd.Client(addr or hub.addr, name=name, connect_timeout=10, **kw)  # type: ignore[arg-type]
        clients.append(c)
        return c

    yield dial
    for c in clients:
        c.close()


class Serving:
    """Clients serving handlers in threads, stopped together."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.threads: List[threading.Thread] = []
        self.errors: List[BaseException] = []

    def start(self, client: hubd.Client, handler: hubd.Handler, **kw: object) -> None:
        def run() -> None:
            try:
                client.serve(handler, stop=self.stop, **kw)  # type: ignore[arg-type]
            except BaseException as e:  # noqa: BLE001 - reported by close()
                self.errors.append(e)

        t = threading.Thread(target=run, daemon=True, name=f"serve-{client.name}")
        t.start()
        self.threads.append(t)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(15)
            assert not t.is_alive(), "serve did not stop"
        assert not self.errors, self.errors


@pytest.fixture
def serving() -> Iterator[Serving]:
    s = Serving()
    yield s
    s.close()


def transcript(client: hubd.Client, session_id: str) -> "tuple[List[str], str]":
    """The turns of a session as "speaker: text", and its close reason,
    following it to its end."""
    turns: List[str] = []
    last = None
    for e in client.follow(session_id, timeout=30):
        last = e
        if hubd.is_turn(e):
            turns.append(f"{hubd.sender(e)}: {hubd.text_of(e)}")
    return turns, hubd.close_reason(last)

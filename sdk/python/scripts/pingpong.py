#!/usr/bin/env python3
"""Turns per second of a two-agent ping-pong served by the Python SDK, over
the agent stream and with unary calls, in the same run (a measurement,
not a test: compare the ratio, not the absolute figures).

    python3 sdk/python/scripts/pingpong.py [--turns 400] [--rounds 3] [--aio] [--no-fsync]

Starts a hubd (``$HUBD_BIN``, else built from the repository) on loopback
with a temporary data directory; per round and transport, two agents serve
a round-robin session of ``--turns`` turns (default view on each turn, as
an application would) and the time from open to close gives turns/s. The
rounds alternate the transports so that drift hits both alike. With
``--no-fsync`` the hub acknowledges without syncing its log (benchmarks
only), which leaves the SDK's and the wire's share of a turn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SDK = Path(__file__).resolve().parents[1]
REPO = SDK.parents[1]
sys.path.insert(0, str(SDK))

import hubd  # noqa: E402
import hubd.aio  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_hub(tmp: Path, fsync: bool) -> "tuple[subprocess.Popen[bytes], str]":
    binary = os.environ.get("HUBD_BIN")
    if not binary:
        binary = str(tmp / "hubd")
        go = shutil.which("go") or "/usr/local/go/bin/go"
        subprocess.run([go, "build", "-o", binary, "./cmd/hubd"], cwd=REPO, check=True)
    addr = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [binary, "serve", "--listen", addr, "--http", "off", "--data", str(tmp / "data"), "--log-level", "warn"]
        + ([] if fsync else ["--fsync=false"]),
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(addr.split(":")).close()  # type: ignore[arg-type]
            return proc, addr
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("hubd did not start")


def wait_closed(c: hubd.Client, sid: str) -> None:
    for e in c.follow(sid, timeout=600):
        if hubd.ends(e):
            return


def sync_round(addr: str, transport: str, turns: int, n: int) -> float:
    a_name, b_name = f"ping-{transport}-{n}", f"pong-{transport}-{n}"
    a = hubd.Client(addr, name=a_name, transport=transport)
    b = hubd.Client(addr, name=b_name, transport=transport)
    stop = threading.Event()
    threads = [
        threading.Thread(target=c.serve, args=(lambda t: "ball",), kwargs={"stop": stop, "handle_signals": False})
        for c in (a, b)
    ]
    for t in threads:
        t.start()
    time.sleep(0.3)  # both streams up
    began = time.perf_counter()
    s = a.open(graph=hubd.round_robin([a_name, b_name], turns), participants=hubd.auto_accepted(b_name))
    wait_closed(a, s.id)
    took = time.perf_counter() - began
    stop.set()
    for t in threads:
        t.join()
    a.close()
    b.close()
    return turns / took


def aio_round(addr: str, transport: str, turns: int, n: int) -> float:
    async def main() -> float:
        a_name, b_name = f"aping-{transport}-{n}", f"apong-{transport}-{n}"
        async with hubd.aio.Client(addr, name=a_name, transport=transport) as a, hubd.aio.Client(
            addr, name=b_name, transport=transport
        ) as b:
            stop = asyncio.Event()

            async def handler(t: hubd.aio.Turn) -> str:
                return "ball"

            servers = [asyncio.ensure_future(c.serve(handler, stop=stop, handle_signals=False)) for c in (a, b)]
            await asyncio.sleep(0.3)
            began = time.perf_counter()
            s = await a.open(graph=hubd.round_robin([a_name, b_name], turns), participants=hubd.auto_accepted(b_name))
            async for e in a.follow(s.id, timeout=600):
                if hubd.ends(e):
                    break
            took = time.perf_counter() - began
            stop.set()
            await asyncio.gather(*servers)
            return turns / took

    return asyncio.run(main())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--aio", action="store_true", help="serve with hubd.aio (coroutine handlers)")
    ap.add_argument("--no-fsync", action="store_true", help="run the hub with --fsync=false")
    args = ap.parse_args()
    run = aio_round if args.aio else sync_round
    with tempfile.TemporaryDirectory() as d:
        proc, addr = start_hub(Path(d), not args.no_fsync)
        try:
            rates: "dict[str, list[float]]" = {"stream": [], "unary": []}
            for n in range(args.rounds):
                for transport in ("stream", "unary") if n % 2 == 0 else ("unary", "stream"):
                    r = run(addr, transport, args.turns, n)
                    rates[transport].append(r)
                    print(f"round {n + 1} {transport:6s} {r:8.1f} turns/s", flush=True)
        finally:
            proc.terminate()
            proc.wait()
    s, u = statistics.median(rates["stream"]), statistics.median(rates["unary"])
    kind = ("asyncio" if args.aio else "sync") + (", hub without fsync" if args.no_fsync else "")
    print(f"{kind} ping-pong, {args.turns} turns, median of {args.rounds}: stream {s:.1f} turns/s, unary {u:.1f} turns/s, stream/unary {s / u:.2f}")


if __name__ == "__main__":
    main()

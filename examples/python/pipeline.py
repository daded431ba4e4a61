#!/usr/bin/env python3
"""Three scripted agents in Python through a workflow session that follows a
sequence graph: the researcher speaks first, the writer drafts from the
findings, the editor signs off, and the hub closes the session with
"sequence_complete". The same pipeline as examples/pipeline in Go.

Run a hub, then the example, from the repository root:

    go run ./cmd/hubd serve --data /tmp/hubd-data &
    python3 examples/python/pipeline.py --hub 127.0.0.1:7420

It prints each turn as "[seq] speaker: text", then "closed: <reason>".
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import secrets
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, TextIO

# Run from a clone without installing the SDK: use sdk/python next to us.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python"))

import hubd  # noqa: E402


def researcher(turn: hubd.Turn) -> hubd.Reply:
    """Opens the work with its findings."""
    return "Findings: group commit batches the fsyncs of concurrent sends."


def writer(turn: hubd.Turn) -> hubd.Reply:
    """Drafts from what the researcher found (the trigger of its turn)."""
    found = turn.text.removeprefix("Findings: ").removesuffix(".")
    return f"Draft: durable writes stay fast because {found}."


def editor(turn: hubd.Turn) -> hubd.Reply:
    """Signs off, counting the turns in its view of the session."""
    items = turn.view.items if turn.view is not None else []
    return f"Approved after reading {len(items)} turns."


AGENTS: Dict[str, Callable[[hubd.Turn], hubd.Reply]] = {
    "researcher": researcher,
    "writer": writer,
    "editor": editor,
}


def line(e: hubd.pb.Envelope) -> str:
    """A turn as "[seq] speaker: text", with a packet's routing and context
    updates in brackets (as the Go examples print it)."""
    s = f"[{e.seq}] {hubd.sender(e)}: {hubd.text_of(e)}"
    if e.type != hubd.EVENT_PACKET:
        return s
    notes: List[str] = []
    r = e.packet.routing
    if r.kind == hubd.ROUTING_HANDOFF:
        notes.append(f"handoff {r.tool} {r.target}".strip())
    elif r.kind == hubd.ROUTING_FINISH:
        notes.append(f"finish {r.reason}")
    elif r.kind == hubd.ROUTING_ESCALATE:
        notes.append("escalate")
    for k in sorted(e.packet.context_updates.set):
        notes.append(f"set {k}={json.dumps(hubd.from_value(e.packet.context_updates.set[k]), separators=(',', ':'))}")
    notes.extend(f"delete {k}" for k in e.packet.context_updates.delete)
    return s + (f" [{'; '.join(notes)}]" if notes else "")


def duration(text: str) -> float:
    """Seconds from "30s", "2m", "500ms" or a bare number."""
    m = re.fullmatch(r"([0-9.]+)(ms|s|m)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[m.group(2)]


def read_tokens(path: Optional[str]) -> Optional[Dict[str, str]]:
    """ "name token" lines (the hub's tokens file works too); None: the hub's
    development mode."""
    if not path:
        return None
    tokens: Dict[str, str] = {}
    for raw in Path(path).read_text().splitlines():
        fields = raw.split()
        if len(fields) >= 2 and not raw.lstrip().startswith("#"):
            tokens[fields[0]] = fields[1]
    return tokens


def run(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    """Run the example with command-line arguments; returns the exit code."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--hub", default="127.0.0.1:7420", help="the hub's host:port (default %(default)s)")
    p.add_argument("--token-file", help='agents\' tokens, one "name token" a line (default: development mode names)')
    p.add_argument("--timeout", type=duration, default=30.0, help="give up after this long (default 30s)")
    p.add_argument("-v", action="store_true", help="log the SDK's diagnostics to stderr")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.v else logging.WARNING, format="%(message)s", stream=sys.stderr)

    tokens = read_tokens(args.token_file)
    # An agent serves every session its name is invited to, whoever opened
    # it: this run's agents serve only the session it opens, by its label.
    labels = {"example": f"pipeline-{secrets.token_hex(4)}"}

    def ours(s: hubd.Session) -> bool:
        return s.labels.get("example") == labels["example"]

    clients: Dict[str, hubd.Client] = {}
    stop = threading.Event()
    errors: List[BaseException] = []
    threads: List[threading.Thread] = []
    try:
        for name in AGENTS:
            token = ""
            if tokens is not None:
                token = tokens.get(name, "")
                if not token:
                    raise SystemExit(f"error: the token file has no token for {name!r}")
            clients[name] = hubd.Client(args.hub, name=name, token=token, connect_timeout=min(args.timeout, 10.0))

        def serve(name: str) -> None:
            try:
                clients[name].serve(AGENTS[name], session_filter=ours, stop=stop, handle_signals=False)
            except BaseException as e:  # reported below
                errors.append(e)
                stop.set()

        for name in AGENTS:
            t = threading.Thread(target=serve, args=(name,), name=name, daemon=True)
            t.start()
            threads.append(t)

        opener = clients["researcher"]
        graph = hubd.sequence("researcher", "writer", "editor")
        s = opener.open(graph=graph, participants=["writer", "editor"], labels=labels)
        deadline = time.monotonic() + args.timeout
        end = None
        for e in opener.follow(s.id, timeout=max(0.0, deadline - time.monotonic())):
            end = e
            if hubd.is_turn(e):
                print(line(e), file=out, flush=True)
        stop.set()
        for t in threads:
            t.join(10)
        if errors:
            raise errors[0]
        print("closed:", hubd.close_reason(end), file=out, flush=True)
        return 0
    except hubd.HubError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        stop.set()
        for c in clients.values():
            c.close()


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))

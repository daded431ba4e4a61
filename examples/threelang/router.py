#!/usr/bin/env python3
"""The Python router of the three-language triage session: it opens a
workflow session with the Go specialist "billing" and the TypeScript
specialist "tech" (examples/threelang/billing, examples/threelang/tech.ts),
hands the customer's problems to them one at a time with transfer_to_<name>
handoff packets (the graph reverts the turn to the router after each), and
finishes the session ("resolved"). The graph is built with hubd.graph and is
examples/triage's (examples/graphs/triage.json; the hub keeps its canonical
form, so the same value written another way is the same graph).

Run a hub, then examples/threelang/run.sh, which starts the two
specialists and the router and stops all three; or by hand, the
specialists and then the router, all with the same --run (see
examples/threelang/README.md):

    python3 examples/threelang/router.py --hub 127.0.0.1:7420 --run threelang

The session is labelled example=<--run>, and the three agents serve only
the sessions with that label.

It prints each turn as "[seq] speaker: text [notes]", then
"closed: <reason>": the same lines as `go run ./examples/triage`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from pathlib import Path
from typing import List, Optional

# Run from a clone without installing the SDK: use sdk/python.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python"))

import hubd  # noqa: E402
from hubd.graph import any_of, from_speaker, revert_to_initiator, terminate, to_agent, tool_called  # noqa: E402


def graph() -> hubd.Graph:
    """Routes by tool to the specialists and back to the router (who opened
    the session); a turn no rule matches ends the session."""
    return (
        hubd.Graph("router")
        .on(tool_called("transfer_to_billing"), to_agent("billing"))
        .on(tool_called("transfer_to_tech"), to_agent("tech"))
        .on(any_of(from_speaker("billing"), from_speaker("tech")), revert_to_initiator())
        .otherwise(terminate("triage_done"))
        .with_max_turns(10)
    )


def router(turn: hubd.Turn) -> hubd.Reply:
    """Works through the customer's two problems, one specialist at a time,
    then finishes."""
    who = hubd.sender(turn.trigger)
    if who == "":  # the session opened
        return hubd.Packet("The customer was charged twice; over to billing.").handoff(
            tool="transfer_to_billing", reason="double charge"
        )
    if who == "billing":
        return hubd.Packet("They cannot log in either; over to tech.").handoff(tool="transfer_to_tech", reason="login")
    if who == "tech":
        return hubd.Packet("Both problems are solved.").finish("resolved", "refund issued, login restored")
    raise ValueError(f"unexpected turn after {who!r}")


def line(e: hubd.pb.Envelope) -> str:
    """A turn as the Go examples print it: "[seq] speaker: text", with a
    packet's routing and context updates in brackets."""
    s = f"[{e.seq}] {hubd.sender(e)}:"
    if hubd.text_of(e):
        s += " " + hubd.text_of(e)
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
    elif r.kind == hubd.ROUTING_PASS_CALLER:
        notes.append(f"pass_caller {r.target}")
    for k in sorted(e.packet.context_updates.set):
        v = hubd.from_value(e.packet.context_updates.set[k])
        notes.append(f"set {k}={json.dumps(v, separators=(',', ':'))}")
    notes.extend(f"delete {k}" for k in e.packet.context_updates.delete)
    return s + (f" [{'; '.join(notes)}]" if notes else "")


def run(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description="The Python router of the three-language triage session.")
    p.add_argument("--hub", default="127.0.0.1:7420", help="the hub's host:port (default %(default)s)")
    p.add_argument("--timeout", type=float, default=30.0, help="give up after this many seconds (default 30)")
    p.add_argument(
        "--run",
        default="threelang",
        help="label the session example=RUN, which the specialists serve (default %(default)s)",
    )
    p.add_argument("-v", action="store_true", help="log the SDK's diagnostics to stderr")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.v else logging.WARNING, format="%(message)s", stream=sys.stderr)

    # An agent serves every session its name is invited to, whoever opened
    # it: the router and the specialists serve only the run's, by its label.
    labels = {"example": args.run}

    def ours(s: hubd.Session) -> bool:
        return s.labels.get("example") == args.run

    stop = threading.Event()
    failed: List[BaseException] = []
    with hubd.Client(args.hub, name="router", connect_timeout=10) as c:

        def serve() -> None:
            try:
                c.serve(router, view=None, session_filter=ours, stop=stop, handle_signals=False)
            except BaseException as e:  # reported below
                failed.append(e)

        t = threading.Thread(target=serve, name="router", daemon=True)
        t.start()
        end: Optional[hubd.pb.Envelope] = None
        try:
            s = c.open(graph=graph(), participants=["billing", "tech"], labels=labels)
            for e in c.follow(s.id, timeout=args.timeout):
                end = e
                if hubd.is_turn(e):
                    print(line(e), flush=True)
        except hubd.HubError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        finally:
            stop.set()
            t.join(10)
        if failed:
            print(f"error: {failed[0]}", file=sys.stderr)
            return 1
        print("closed:", hubd.close_reason(end), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))

"""A real hubd cluster on loopback for the tests: three hubd processes,
each with its embedded NATS server routed to the others (``--embed-nats``),
the deployment of docs/SCALING.md. P = 8 partitions, a 2 s lease.

Every node's arguments are built in one place (:meth:`Cluster.node_args`;
a gateway's in :meth:`Cluster.gateway`).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

PARTITIONS = 8
LEASE = "2s"


def _free_ports(n: int) -> List[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


class Node:
    """One hubd process of a :class:`Cluster`."""

    def __init__(self, node_id: str, addr: str, nats: str, args: List[str], log: Path) -> None:
        self.id = node_id
        self.addr = addr
        self.nats = nats
        self.args = args
        self.log = log
        self.proc: Optional["subprocess.Popen[bytes]"] = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        """Send sig and wait for the process to end (SIGKILL: a node dies;
        SIGTERM: it hands its partitions back and stops)."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Cluster:
    """Three hubd nodes (n1, n2, n3) sharing one session space."""

    def __init__(self, binary: Path, dir: Path, n: int = 3) -> None:
        self.binary = binary
        self.dir = dir
        ports = _free_ports(3 * n)  # gRPC, NATS client, NATS route per node
        routes = [f"127.0.0.1:{ports[2 * n + i]}" for i in range(n)]
        self.nodes: List[Node] = []
        for i in range(n):
            node_id = f"n{i + 1}"
            addr = f"127.0.0.1:{ports[i]}"
            nats = f"127.0.0.1:{ports[n + i]}"
            args = self.node_args(node_id, addr, nats, routes[i], routes)
            self.nodes.append(Node(node_id, addr, f"nats://{nats}", args, dir / f"{node_id}.log"))

    def node_args(self, node_id: str, addr: str, nats: str, route: str, routes: List[str]) -> List[str]:
        """The one place a node's hubd arguments are made."""
        args = [
            "serve",
            "--listen",
            addr,
            "--http",
            "off",
            "--data",
            str(self.dir / node_id),
            "--log-format",
            "json",
            "--node-id",
            node_id,
            "--partitions",
            str(PARTITIONS),
            "--lease-ttl",
            LEASE,
            "--embed-nats",
            "--nats-listen",
            nats,
            "--nats-route-listen",
            route,
            "--nats-routes",
            ",".join(routes),
        ]
        return args

    def gateway(self, node_id: str, timeout: float = 60.0) -> Node:
        """Start a node that serves no partition (``--gateway``), a client of
        the nodes' NATS servers, which runs every call and stream on the
        node that serves its session. The caller stops it; it is not one of
        :attr:`nodes`."""
        addr = f"127.0.0.1:{_free_ports(1)[0]}"
        args = ["serve", "--listen", addr, "--http", "off", "--data", str(self.dir / node_id), "--log-format", "json"]
        args += ["--node-id", node_id, "--gateway", "--cluster", ",".join(n.nats for n in self.nodes)]
        args += ["--partitions", str(PARTITIONS), "--lease-ttl", LEASE]
        g = Node(node_id, addr, "", args, self.dir / f"{node_id}.log")
        self._spawn(g)
        self._await_listen(g, timeout)
        return g

    @property
    def addrs(self) -> List[str]:
        return [n.addr for n in self.nodes]

    def start(self, timeout: float = 60.0) -> "Cluster":
        """Start every node (each waits for a NATS quorum before it listens)
        and return once all listen and the partitions are spread over
        them."""
        for n in self.nodes:
            self._spawn(n)
        for n in self.nodes:
            self._await_listen(n, timeout)
        self.wait_spread([n.id for n in self.nodes], timeout)
        return self

    def _spawn(self, n: Node) -> None:
        with open(n.log, "ab") as log:
            n.proc = subprocess.Popen([str(self.binary), *n.args], stdout=subprocess.DEVNULL, stderr=log)

    def _await_listen(self, n: Node, timeout: float) -> None:
        host, port = n.addr.rsplit(":", 1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not n.alive():
                raise RuntimeError(f"node {n.id} exited:\n{self.tail(n)}")
            try:
                with socket.create_connection((host, int(port)), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"node {n.id} did not listen within {timeout:g}s:\n{self.tail(n)}")

    def status(self, via: Node) -> Optional[Dict[str, object]]:
        """``hubd cluster status --json`` through via's NATS server."""
        out = subprocess.run(
            [str(self.binary), "cluster", "status", "--nats", via.nats, "--json"], capture_output=True, text=True
        )
        if out.returncode != 0:
            return None
        st: Dict[str, object] = json.loads(out.stdout)
        return st

    def owners(self, via: Node) -> Dict[int, str]:
        """Partition → owning node id, as via's NATS server tells."""
        st = self.status(via)
        parts = st.get("partitions", []) if st else []
        return {int(p["partition"]): str(p.get("owner", "")) for p in parts}  # type: ignore[union-attr,index]

    def wait_spread(self, ids: List[str], timeout: float = 60.0) -> float:
        """Wait until every partition is owned by one of ids, each owning
        some; return how long that took."""
        start = time.monotonic()
        via = next(n for n in self.nodes if n.id == ids[0])
        last: Dict[int, str] = {}
        while time.monotonic() - start < timeout:
            last = self.owners(via)
            if len(last) == PARTITIONS and set(last.values()) == set(ids):
                return time.monotonic() - start
            time.sleep(0.1)
        logs = "\n".join(f"{n.id}:\n{self.tail(n)}" for n in self.nodes)
        raise RuntimeError(f"partitions not spread over {ids} within {timeout:g}s: {last}\n{logs}")

    def tail(self, n: Node, lines: int = 30) -> str:
        try:
            return "\n".join(n.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        for n in self.nodes:
            if n.alive():
                n.signal(signal.SIGKILL)

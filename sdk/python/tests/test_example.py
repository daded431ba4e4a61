"""examples/python/pipeline.py prints the same transcript as the Go
example (examples/pipeline)."""

from __future__ import annotations

import subprocess
import sys

from .conftest import REPO, Hub

WANT = """\
[5] researcher: Findings: group commit batches the fsyncs of concurrent sends.
[6] writer: Draft: durable writes stay fast because group commit batches the fsyncs of concurrent sends.
[7] editor: Approved after reading 2 turns.
closed: sequence_complete
"""


def test_pipeline_example(hub: Hub) -> None:
    res = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / "pipeline.py"), "--hub", hub.addr, "--timeout", "30s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == WANT


def test_pipeline_example_without_a_hub() -> None:
    from .conftest import free_port

    res = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "python" / "pipeline.py"),
            "--hub",
            f"127.0.0.1:{free_port()}",
            "--timeout",
            "1s",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1 and res.stderr.startswith("error: connect: no connection"), res.stderr


def test_pipeline_example_serves_only_its_session(hub: Hub) -> None:
    """Sessions another client opened with an agent named editor (one
    inviting it, one in which it speaks first) get nothing from the
    example's editor: it serves the session its run opened, by its label."""
    import hubd

    with hubd.Client(hub.addr, name="person", connect_timeout=10) as person:
        invited = person.open_workflow(hubd.sequence("person", "editor"), "editor")
        first = person.open(graph=hubd.sequence("editor", "person"), participants=hubd.auto_accepted("editor"))
        try:
            res = subprocess.run(
                [sys.executable, str(REPO / "examples" / "python" / "pipeline.py"), "--hub", hub.addr],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert res.returncode == 0, res.stderr
            assert res.stdout == WANT
            for s in (invited, first):
                acted = [e for e in person.read_log(s.id) if hubd.sender(e) == "editor"]
                assert not acted, f"the example's editor acted in {s.id}, a session it did not open: {acted}"
            assert person.get_session(invited.id).state == hubd.STATE_PENDING
        finally:
            for s in (invited, first):
                person.close_session(s.id, "done")

"""The graph builders write the same JSON values as the Go SDK's
(sdk/testdata/graphs is the contract, written by agentsdk's
TestGoldenGraphs: a contract on meaning, as the hub keeps a graph in its
canonical form), and the hub accepts them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest

import hubd
from hubd import graph as g

from .conftest import REPO

GOLDEN = REPO / "sdk" / "testdata" / "graphs"


def every_node(custom: bool = True) -> g.Graph:
    """agentsdk's "every_node" case: every built-in condition and target;
    without custom nodes it is a graph a stock hub accepts."""
    urgent = g.custom_condition("is_urgent", {"level": 2}) if custom else g.always()
    human = g.custom_target("escalate_to_human", None) if custom else g.stay()
    return (
        g.Graph("a")
        .on(g.always(), g.stay())
        .on_priority(1, g.from_speaker("a"), g.to_agent("b"))
        .on_priority(2, g.tool_called("t"), g.to_next_in_order())
        .on_priority(3, g.context_equals("k", {"x": [1, "y", True, None]}), g.revert_to_initiator())
        .on_priority(4, g.context_in("k", "a", 2.5), g.terminate("done"))
        .on_priority(5, g.context_compare("n", "ge", 3), g.to_supervisor())
        .on_priority(6, g.all_of(g.mentions("b"), g.not_(g.turn_count_at_least(2))), g.to_mentioned())
        .on_priority(7, g.any_of(g.event_type_is("packet"), urgent), g.to_active_agent("a"))
        .on(g.always(), g.to_active_agent(""))
        .on(g.always(), human)
        .otherwise(g.terminate(""))
        .with_max_turns(9)
    )


CASES: Dict[str, g.Graph] = {
    "sequence": hubd.sequence("researcher", "writer", "editor"),
    "round_robin": hubd.round_robin(["a", "b", "c"], 6),
    "supervisor": hubd.supervisor("router", ["billing", "tech"]),
    "supervisor_user": hubd.supervisor(
        "router", ["billing", "tech"], user="user", max_turns=20, transfer_prefix="to_", help_tool="help"
    ),
    "every_node": every_node(),
}


def meaning(v: Any) -> Any:
    """A JSON value as what it means: numbers by their value (1 and 1.0
    alike), booleans apart from numbers, objects whatever their key order."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return ("number", float(v))
    if isinstance(v, dict):
        return {k: meaning(x) for k, x in v.items()}
    if isinstance(v, list):
        return [meaning(x) for x in v]
    raise TypeError(f"not a JSON value: {v!r}")


def test_meaning() -> None:
    assert meaning(json.loads('{"b":[1,true,null],"a":2.50}')) == meaning(json.loads('{"a":2.5,"b":[1.0,true,null]}'))
    assert meaning(json.loads("[1]")) != meaning(json.loads("[true]"))
    assert meaning(json.loads('{"a":1}')) != meaning(json.loads('{"a":"1"}'))


def test_every_golden_file_has_a_case() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_meaning(name: str) -> None:
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    assert meaning(json.loads(CASES[name].to_json())) == meaning(want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_decode_encodes_back(name: str) -> None:
    want = (GOLDEN / f"{name}.json").read_text()
    decoded = g.Graph.from_json(want)
    assert meaning(json.loads(decoded.to_json())) == meaning(json.loads(want))
    assert decoded == CASES[name]


def validate(
    hubd_bin: Path, tmp_path: Path, graph: g.Graph, participants: str = ""
) -> "subprocess.CompletedProcess[str]":
    f = tmp_path / "graph.json"
    f.write_text(graph.to_json())
    args = [str(hubd_bin), "graph", "validate"]
    if participants:
        args += ["--participants", participants]
    return subprocess.run([*args, str(f)], capture_output=True, text=True)


@pytest.mark.parametrize("name", ["sequence", "round_robin", "supervisor", "supervisor_user"])
def test_hub_validates(hubd_bin: Path, tmp_path: Path, name: str) -> None:
    res = validate(hubd_bin, tmp_path, CASES[name])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("ok: ")


def test_hub_validates_every_builtin_node(hubd_bin: Path, tmp_path: Path) -> None:
    # every_node itself names custom nodes, which a stock hub refuses.
    res = validate(hubd_bin, tmp_path, every_node(custom=False), "a,b")
    assert res.returncode == 0, res.stderr
    res = validate(hubd_bin, tmp_path, every_node(), "a,b")
    assert res.returncode != 0 and "is_urgent" in res.stderr


def test_hub_refuses_a_bad_graph(hubd_bin: Path, tmp_path: Path) -> None:
    res = validate(hubd_bin, tmp_path, hubd.sequence("a", "b"), "a,c")
    assert res.returncode != 0 and "b" in res.stderr


def test_defaults() -> None:
    gr = g.Graph("a")
    assert gr.to_json() == (
        '{"version":1,"initial_speaker":"a","transitions":[],'
        '"default_target":{"name":"terminate","args":{"reason":"after_work"}},"max_turns":null}'
    )
    assert g.terminate().args == {"reason": "terminated"}
    assert g.to_active_agent().args == {}
    assert hubd.sequence().to_dict()["initial_speaker"] == ""


def test_to_struct() -> None:
    s = hubd.sequence("a", "b").to_struct()
    assert s["initial_speaker"] == "a"
    assert s["max_turns"] == 2


def test_from_json_refusals() -> None:
    with pytest.raises(ValueError, match="version 2"):
        g.Graph.from_json('{"version": 2}')
    with pytest.raises(ValueError, match=r"transitions\[0\]"):
        g.Graph.from_json('{"transitions": [{"when": {"name": "always"}}]}')
    with pytest.raises(ValueError):
        g.Graph.from_json('{"version": NaN}')


def test_to_json_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(ValueError):
        g.Graph("a").on(g.context_compare("n", "ge", float("nan")), g.stay()).to_json()
    assert "é<" in g.Graph("é<").to_json()  # written as it is, not escaped

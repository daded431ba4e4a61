"""Importing hubd in a Python that lacks grpcio or protobuf (a virtual
environment, pyenv or conda beside Debian's system Python) says how to get
them, instead of a bare ModuleNotFoundError."""

from __future__ import annotations

import subprocess
import sys
from typing import List

from .conftest import SDK

# Imports hubd from the SDK's directory and prints the ImportError it
# raises: its class, the module it names, and its message.
PROBE = """
import sys
sys.path.insert(0, {sdk!r})
{block}
try:
    import hubd
except ImportError as e:
    print(type(e).__name__, e.name)
    print(e)
    sys.exit(3)
print("imported")
"""

# A finder that makes the modules in BLOCKED (and their submodules)
# unimportable, as if their package were not installed.
BLOCK = """
import importlib.abc
BLOCKED = {names!r}
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Missing())
"""


def probe(args: List[str], blocked: List[str]) -> subprocess.CompletedProcess[str]:
    block = BLOCK.format(names=blocked) if blocked else ""
    code = PROBE.format(sdk=str(SDK), block=block)
    return subprocess.run([sys.executable, *args, "-c", code], capture_output=True, text=True, timeout=60)


def assert_explains(res: subprocess.CompletedProcess[str], missing: str) -> None:
    assert res.returncode == 3, f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    kind, message = res.stdout.split("\n", 1)
    # A ModuleNotFoundError (an ImportError) naming the missing module, as
    # Python's own is, so code that catches either still does.
    assert kind == f"ModuleNotFoundError {missing}", kind
    assert f"{sys.executable} cannot import {missing}" in message, message
    for how in (
        "sudo apt-get install python3-grpcio python3-protobuf",
        "pip install grpcio protobuf",
        "python3 -m venv --system-site-packages",
    ):
        assert how in message, f"{how!r} not in:\n{message}"


def test_a_python_without_debians_packages() -> None:
    # -S leaves out site-packages, where Debian's python3-grpcio and
    # python3-protobuf are: a Python that has neither, as a fresh virtual
    # environment or pyenv's is.
    res = probe(["-S"], [])
    assert_explains(res, "grpc")


def test_without_grpcio() -> None:
    assert_explains(probe([], ["grpc"]), "grpc")


def test_without_protobuf() -> None:
    assert_explains(probe([], ["google.protobuf"]), "google.protobuf")


def test_with_both() -> None:
    res = probe([], [])
    assert res.returncode == 0 and res.stdout == "imported\n", res.stdout + res.stderr

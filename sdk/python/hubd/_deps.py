"""The SDK's two requirements, grpcio and protobuf, imported first so that a
Python without them says how to get them (Debian's python3-grpcio and
python3-protobuf belong to the system's Python only: a virtual environment,
pyenv or conda does not see them)."""

from __future__ import annotations

import sys


def missing(name: str) -> str:
    """What to do when module name (grpc, google.protobuf) cannot be
    imported."""
    return (
        f"hubd needs grpcio and protobuf, and {sys.executable} cannot import {name}.\n"
        "  Debian's or Ubuntu's system Python (/usr/bin/python3):\n"
        "      sudo apt-get install python3-grpcio python3-protobuf\n"
        "  A virtual environment, pyenv or conda:\n"
        "      pip install grpcio protobuf       (pip install ./sdk/python installs them with hubd)\n"
        "  A virtual environment that uses Debian's packages:\n"
        "      python3 -m venv --system-site-packages .venv"
    )


def require() -> None:
    """Imports grpc and google.protobuf, or raises ModuleNotFoundError (an
    ImportError) saying how to install what is missing."""
    for name in ("grpc", "google.protobuf"):
        try:
            __import__(name)
        except ModuleNotFoundError:
            raise ModuleNotFoundError(missing(name), name=name) from None

"""The hub's messages (hubpb/hub.proto, package ``hubd.v1``), generated:
``hubd.pb.Envelope``, ``hubd.pb.Delivery``, ``hubd.pb.View``,
``hubd.pb.SessionInfo``, ``hubd.pb.Reason``, ... Read them by their fields
(``envelope.seq``, ``envelope.packet.routing.kind``); ``from`` is a Python
keyword, so read a sender with :func:`hubd.sender`.

The gRPC stub is :class:`hubd.pb.HubStub` (hubpb/hub_service.proto).
"""

from ._pb.hub_pb2 import *  # noqa: F401,F403
from ._pb.hub_pb2 import DESCRIPTOR  # noqa: F401
from ._pb.hub_service_pb2_grpc import HubStub  # noqa: F401

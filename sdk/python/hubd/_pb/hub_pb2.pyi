from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BAD_ANSWER: Reason
BAD_HANDOFF_TARGET: Reason
BAD_LIFECYCLE_TRANSITION: Reason
CANCELED: Reason
DEADLINE_EXCEEDED: Reason
DELEGATE_NOT_ALLOWED: Reason
DEPTH_EXCEEDED: Reason
DESCRIPTOR: _descriptor.FileDescriptor
DISK_FULL: Reason
DRAINING: Reason
ERASED: Reason
HUB_ONLY_EVENT: Reason
IDEMPOTENCY_CONFLICT: Reason
IMPERSONATION: Reason
INTERNAL: Reason
INVALID_GRAPH: Reason
LIMIT_REACHED: Reason
MALFORMED: Reason
NOTHING_TO_STEER: Reason
NOT_OWNER: Reason
NOT_PARTICIPANT: Reason
OUT_OF_TURN: Reason
PERMISSION_DENIED: Reason
PURGED: Reason
QUARANTINED: Reason
REASON_UNSPECIFIED: Reason
SESSION_CLOSED: Reason
SESSION_FAILED: Reason
SESSION_NOT_OPEN: Reason
SLOW_SUBSCRIBER: Reason
STORAGE_FAILED: Reason
TOO_LARGE: Reason
TURN_HELD: Reason
UNAUTHENTICATED: Reason
UNKNOWN_SESSION: Reason
UNKNOWN_SESSION_TYPE: Reason

class AgentFrame(_message.Message):
    __slots__ = ["delta", "open", "send", "subscribe"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    SEND_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    delta: Delta
    open: StreamOpen
    send: StreamSend
    subscribe: SubscribeRequest
    def __init__(self, send: _Optional[_Union[StreamSend, _Mapping]] = ..., subscribe: _Optional[_Union[SubscribeRequest, _Mapping]] = ..., open: _Optional[_Union[StreamOpen, _Mapping]] = ..., delta: _Optional[_Union[Delta, _Mapping]] = ...) -> None: ...

class Answer(_message.Message):
    __slots__ = ["by", "defaulted", "option_ids", "question_id", "text"]
    BY_FIELD_NUMBER: _ClassVar[int]
    DEFAULTED_FIELD_NUMBER: _ClassVar[int]
    OPTION_IDS_FIELD_NUMBER: _ClassVar[int]
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    by: str
    defaulted: bool
    option_ids: _containers.RepeatedScalarFieldContainer[str]
    question_id: str
    text: str
    def __init__(self, question_id: _Optional[str] = ..., option_ids: _Optional[_Iterable[str]] = ..., text: _Optional[str] = ..., defaulted: bool = ..., by: _Optional[str] = ...) -> None: ...

class AnswerRequest(_message.Message):
    __slots__ = ["answer", "client_msg_id", "session_id"]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    CLIENT_MSG_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    answer: Answer
    client_msg_id: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., answer: _Optional[_Union[Answer, _Mapping]] = ..., client_msg_id: _Optional[str] = ...) -> None: ...

class ArchiveHeader(_message.Message):
    __slots__ = ["day", "magic", "version"]
    DAY_FIELD_NUMBER: _ClassVar[int]
    MAGIC_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    day: str
    magic: str
    version: int
    def __init__(self, magic: _Optional[str] = ..., version: _Optional[int] = ..., day: _Optional[str] = ...) -> None: ...

class ArchiveRecord(_message.Message):
    __slots__ = ["checksum", "envelope", "header", "session"]
    CHECKSUM_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    checksum: int
    envelope: Envelope
    header: ArchiveHeader
    session: ArchivedSession
    def __init__(self, header: _Optional[_Union[ArchiveHeader, _Mapping]] = ..., session: _Optional[_Union[ArchivedSession, _Mapping]] = ..., envelope: _Optional[_Union[Envelope, _Mapping]] = ..., checksum: _Optional[int] = ...) -> None: ...

class ArchivedSession(_message.Message):
    __slots__ = ["archived_at", "ended_at", "last_seq", "meta"]
    ARCHIVED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    archived_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    last_seq: int
    meta: SessionMeta
    def __init__(self, meta: _Optional[_Union[SessionMeta, _Mapping]] = ..., archived_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_seq: _Optional[int] = ...) -> None: ...

class Audience(_message.Message):
    __slots__ = ["names"]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class BackupChunk(_message.Message):
    __slots__ = ["data", "format", "sha256", "total_bytes"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    format: str
    sha256: bytes
    total_bytes: int
    def __init__(self, data: _Optional[bytes] = ..., format: _Optional[str] = ..., sha256: _Optional[bytes] = ..., total_bytes: _Optional[int] = ...) -> None: ...

class BackupRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Budget(_message.Message):
    __slots__ = ["max_cost", "max_tokens"]
    MAX_COST_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    max_cost: float
    max_tokens: int
    def __init__(self, max_tokens: _Optional[int] = ..., max_cost: _Optional[float] = ...) -> None: ...

class Call(_message.Message):
    __slots__ = ["depth", "id", "parent", "root"]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    depth: int
    id: str
    parent: str
    root: str
    def __init__(self, id: _Optional[str] = ..., parent: _Optional[str] = ..., root: _Optional[str] = ..., depth: _Optional[int] = ...) -> None: ...

class CloseRequest(_message.Message):
    __slots__ = ["reason", "session_id"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ContextUpdate(_message.Message):
    __slots__ = ["delete", "set"]
    class SetEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    DELETE_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    delete: _containers.RepeatedScalarFieldContainer[str]
    set: _containers.MessageMap[str, _struct_pb2.Value]
    def __init__(self, delete: _Optional[_Iterable[str]] = ..., set: _Optional[_Mapping[str, _struct_pb2.Value]] = ...) -> None: ...

class DelegateRequest(_message.Message):
    __slots__ = ["children", "client_msg_id", "mode", "notify", "session_id"]
    AWAIT_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    CLIENT_MSG_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[OpenRequest]
    client_msg_id: str
    mode: str
    notify: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., children: _Optional[_Iterable[_Union[OpenRequest, _Mapping]]] = ..., mode: _Optional[str] = ..., notify: _Optional[str] = ..., client_msg_id: _Optional[str] = ..., **kwargs) -> None: ...

class DelegateResponse(_message.Message):
    __slots__ = ["children", "delegation", "duplicate"]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    delegation: SendResponse
    duplicate: bool
    def __init__(self, delegation: _Optional[_Union[SendResponse, _Mapping]] = ..., children: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ..., duplicate: bool = ...) -> None: ...

class Delegation(_message.Message):
    __slots__ = ["child_session_ids", "delegator", "mode", "notify"]
    AWAIT_FIELD_NUMBER: _ClassVar[int]
    CHILD_SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    DELEGATOR_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NOTIFY_FIELD_NUMBER: _ClassVar[int]
    child_session_ids: _containers.RepeatedScalarFieldContainer[str]
    delegator: str
    mode: str
    notify: str
    def __init__(self, child_session_ids: _Optional[_Iterable[str]] = ..., delegator: _Optional[str] = ..., mode: _Optional[str] = ..., notify: _Optional[str] = ..., **kwargs) -> None: ...

class DelegationResult(_message.Message):
    __slots__ = ["child_session_id", "delegation_id", "reason", "responder", "state", "summary", "usage"]
    CHILD_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESPONDER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    child_session_id: str
    delegation_id: str
    reason: str
    responder: str
    state: str
    summary: str
    usage: Usage
    def __init__(self, child_session_id: _Optional[str] = ..., reason: _Optional[str] = ..., summary: _Optional[str] = ..., state: _Optional[str] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., responder: _Optional[str] = ..., delegation_id: _Optional[str] = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ["delta", "envelope", "view", "your_turn"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    YOUR_TURN_FIELD_NUMBER: _ClassVar[int]
    delta: Delta
    envelope: Envelope
    view: View
    your_turn: bool
    def __init__(self, envelope: _Optional[_Union[Envelope, _Mapping]] = ..., your_turn: bool = ..., view: _Optional[_Union[View, _Mapping]] = ..., delta: _Optional[_Union[Delta, _Mapping]] = ...) -> None: ...

class Delta(_message.Message):
    __slots__ = ["abandoned", "accepted_at", "index", "refused", "session_id", "stream_id", "text"]
    ABANDONED_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_AT_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    abandoned: bool
    accepted_at: _timestamp_pb2.Timestamp
    index: int
    refused: StreamError
    session_id: str
    stream_id: str
    text: str
    def __init__(self, session_id: _Optional[str] = ..., stream_id: _Optional[str] = ..., index: _Optional[int] = ..., text: _Optional[str] = ..., abandoned: bool = ..., accepted_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., refused: _Optional[_Union[StreamError, _Mapping]] = ..., **kwargs) -> None: ...

class DeltaResponse(_message.Message):
    __slots__ = ["accepted_at", "index"]
    ACCEPTED_AT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    accepted_at: _timestamp_pb2.Timestamp
    index: int
    def __init__(self, index: _Optional[int] = ..., accepted_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Ended(_message.Message):
    __slots__ = ["detail", "reason"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    detail: str
    reason: str
    def __init__(self, reason: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ["accepted_at", "answer", "audience", "call", "causation_id", "client_msg_id", "context_set", "custom", "delegation", "delegation_result", "ended", "fork", "id", "invite", "message", "operator_action", "packet", "question", "question_closed", "rule", "seq", "session_id", "task_progress", "text", "tool_call", "tool_result", "traceparent", "type", "violation"]
    ACCEPTED_AT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    AUDIENCE_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CAUSATION_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_MSG_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_SET_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_RESULT_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    FORK_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INVITE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_ACTION_FIELD_NUMBER: _ClassVar[int]
    PACKET_FIELD_NUMBER: _ClassVar[int]
    QUESTION_CLOSED_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_FIELD_NUMBER: _ClassVar[int]
    accepted_at: _timestamp_pb2.Timestamp
    answer: Answer
    audience: Audience
    call: Call
    causation_id: str
    client_msg_id: str
    context_set: ContextUpdate
    custom: bytes
    delegation: Delegation
    delegation_result: DelegationResult
    ended: Ended
    fork: Fork
    id: str
    invite: Invite
    message: Text
    operator_action: OperatorAction
    packet: Packet
    question: Question
    question_closed: QuestionClosed
    rule: str
    seq: int
    session_id: str
    task_progress: TaskProgress
    text: Text
    tool_call: ToolCall
    tool_result: ToolResult
    traceparent: str
    type: str
    violation: Violation
    def __init__(self, session_id: _Optional[str] = ..., seq: _Optional[int] = ..., id: _Optional[str] = ..., audience: _Optional[_Union[Audience, _Mapping]] = ..., type: _Optional[str] = ..., text: _Optional[_Union[Text, _Mapping]] = ..., packet: _Optional[_Union[Packet, _Mapping]] = ..., context_set: _Optional[_Union[ContextUpdate, _Mapping]] = ..., invite: _Optional[_Union[Invite, _Mapping]] = ..., ended: _Optional[_Union[Ended, _Mapping]] = ..., violation: _Optional[_Union[Violation, _Mapping]] = ..., question: _Optional[_Union[Question, _Mapping]] = ..., answer: _Optional[_Union[Answer, _Mapping]] = ..., delegation_result: _Optional[_Union[DelegationResult, _Mapping]] = ..., task_progress: _Optional[_Union[TaskProgress, _Mapping]] = ..., custom: _Optional[bytes] = ..., delegation: _Optional[_Union[Delegation, _Mapping]] = ..., question_closed: _Optional[_Union[QuestionClosed, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., message: _Optional[_Union[Text, _Mapping]] = ..., fork: _Optional[_Union[Fork, _Mapping]] = ..., operator_action: _Optional[_Union[OperatorAction, _Mapping]] = ..., causation_id: _Optional[str] = ..., client_msg_id: _Optional[str] = ..., call: _Optional[_Union[Call, _Mapping]] = ..., traceparent: _Optional[str] = ..., accepted_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., rule: _Optional[str] = ..., **kwargs) -> None: ...

class EraseRequest(_message.Message):
    __slots__ = ["creator", "participant", "reason", "session_ids", "thread_key"]
    CREATOR_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    THREAD_KEY_FIELD_NUMBER: _ClassVar[int]
    creator: str
    participant: str
    reason: str
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    thread_key: str
    def __init__(self, session_ids: _Optional[_Iterable[str]] = ..., thread_key: _Optional[str] = ..., creator: _Optional[str] = ..., participant: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class EraseResponse(_message.Message):
    __slots__ = ["sessions"]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[ErasedSession]
    def __init__(self, sessions: _Optional[_Iterable[_Union[ErasedSession, _Mapping]]] = ...) -> None: ...

class ErasedSession(_message.Message):
    __slots__ = ["erased_at", "erased_by", "reason", "session_id"]
    ERASED_AT_FIELD_NUMBER: _ClassVar[int]
    ERASED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    erased_at: _timestamp_pb2.Timestamp
    erased_by: str
    reason: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., erased_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., erased_by: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Expectation(_message.Message):
    __slots__ = ["action", "name", "within"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    WITHIN_FIELD_NUMBER: _ClassVar[int]
    action: str
    name: str
    within: _duration_pb2.Duration
    def __init__(self, name: _Optional[str] = ..., action: _Optional[str] = ..., within: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Expectations(_message.Message):
    __slots__ = ["items"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Expectation]
    def __init__(self, items: _Optional[_Iterable[_Union[Expectation, _Mapping]]] = ...) -> None: ...

class Fork(_message.Message):
    __slots__ = ["context", "forked_by", "next_speaker", "origin"]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FORKED_BY_FIELD_NUMBER: _ClassVar[int]
    NEXT_SPEAKER_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    context: ContextUpdate
    forked_by: str
    next_speaker: str
    origin: ForkOrigin
    def __init__(self, origin: _Optional[_Union[ForkOrigin, _Mapping]] = ..., context: _Optional[_Union[ContextUpdate, _Mapping]] = ..., next_speaker: _Optional[str] = ..., forked_by: _Optional[str] = ...) -> None: ...

class ForkOrigin(_message.Message):
    __slots__ = ["at_seq", "session_id"]
    AT_SEQ_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    at_seq: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., at_seq: _Optional[int] = ...) -> None: ...

class ForkRequest(_message.Message):
    __slots__ = ["at_seq", "context", "labels", "next_speaker", "session_id"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AT_SEQ_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NEXT_SPEAKER_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    at_seq: int
    context: ContextUpdate
    labels: _containers.ScalarMap[str, str]
    next_speaker: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., at_seq: _Optional[int] = ..., context: _Optional[_Union[ContextUpdate, _Mapping]] = ..., next_speaker: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ForkResponse(_message.Message):
    __slots__ = ["session"]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: SessionInfo
    def __init__(self, session: _Optional[_Union[SessionInfo, _Mapping]] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetTreeRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetViewRequest(_message.Message):
    __slots__ = ["history", "name", "session_id", "window"]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    history: str
    name: str
    session_id: str
    window: int
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ..., window: _Optional[int] = ..., history: _Optional[str] = ...) -> None: ...

class Hold(_message.Message):
    __slots__ = ["answerer", "children", "done", "envelope_id", "holder", "kind", "question_id", "since"]
    ANSWERER_FIELD_NUMBER: _ClassVar[int]
    AWAIT_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_ID_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    answerer: str
    children: _containers.RepeatedScalarFieldContainer[str]
    done: _containers.RepeatedScalarFieldContainer[str]
    envelope_id: str
    holder: str
    kind: str
    question_id: str
    since: _timestamp_pb2.Timestamp
    def __init__(self, holder: _Optional[str] = ..., kind: _Optional[str] = ..., envelope_id: _Optional[str] = ..., children: _Optional[_Iterable[str]] = ..., done: _Optional[_Iterable[str]] = ..., question_id: _Optional[str] = ..., answerer: _Optional[str] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., **kwargs) -> None: ...

class HubFrame(_message.Message):
    __slots__ = ["ack", "closing", "delivery", "delta", "ready"]
    ACK_FIELD_NUMBER: _ClassVar[int]
    CLOSING_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    ack: StreamAck
    closing: StreamError
    delivery: Delivery
    delta: Delta
    ready: StreamReady
    def __init__(self, ready: _Optional[_Union[StreamReady, _Mapping]] = ..., ack: _Optional[_Union[StreamAck, _Mapping]] = ..., delivery: _Optional[_Union[Delivery, _Mapping]] = ..., closing: _Optional[_Union[StreamError, _Mapping]] = ..., delta: _Optional[_Union[Delta, _Mapping]] = ...) -> None: ...

class ImportRequest(_message.Message):
    __slots__ = ["archive", "session_ids"]
    ARCHIVE_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    archive: str
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, archive: _Optional[str] = ..., session_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ImportResponse(_message.Message):
    __slots__ = ["sessions"]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[ImportedSession]
    def __init__(self, sessions: _Optional[_Iterable[_Union[ImportedSession, _Mapping]]] = ...) -> None: ...

class ImportedSession(_message.Message):
    __slots__ = ["archive", "envelopes", "session_id"]
    ARCHIVE_FIELD_NUMBER: _ClassVar[int]
    ENVELOPES_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    archive: str
    envelopes: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., envelopes: _Optional[int] = ..., archive: _Optional[str] = ...) -> None: ...

class Invite(_message.Message):
    __slots__ = ["invitees"]
    INVITEES_FIELD_NUMBER: _ClassVar[int]
    invitees: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, invitees: _Optional[_Iterable[str]] = ...) -> None: ...

class InviteRequest(_message.Message):
    __slots__ = ["reason", "session_id"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ListQuestionsRequest(_message.Message):
    __slots__ = ["answerer", "root_session_id"]
    ANSWERER_FIELD_NUMBER: _ClassVar[int]
    ROOT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    answerer: str
    root_session_id: str
    def __init__(self, answerer: _Optional[str] = ..., root_session_id: _Optional[str] = ...) -> None: ...

class ListQuestionsResponse(_message.Message):
    __slots__ = ["questions"]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    questions: _containers.RepeatedCompositeFieldContainer[PendingQuestion]
    def __init__(self, questions: _Optional[_Iterable[_Union[PendingQuestion, _Mapping]]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ["creator", "labels", "page_size", "page_token", "participant", "state"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CREATOR_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    creator: str
    labels: _containers.ScalarMap[str, str]
    page_size: int
    page_token: str
    participant: str
    state: str
    def __init__(self, state: _Optional[str] = ..., creator: _Optional[str] = ..., participant: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., page_token: _Optional[str] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ["next_page_token", "sessions"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class OpenRequest(_message.Message):
    __slots__ = ["budget", "delegates", "expectations", "graph", "idempotency_key", "invite_timeout", "knobs", "labels", "parent_session_id", "participants", "retention", "task", "thread_key", "ttl", "type"]
    class KnobsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    DELEGATES_FIELD_NUMBER: _ClassVar[int]
    EXPECTATIONS_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    INVITE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    KNOBS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANTS_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    THREAD_KEY_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    delegates: _containers.RepeatedScalarFieldContainer[str]
    expectations: Expectations
    graph: _struct_pb2.Struct
    idempotency_key: str
    invite_timeout: _duration_pb2.Duration
    knobs: _containers.MessageMap[str, _struct_pb2.Value]
    labels: _containers.ScalarMap[str, str]
    parent_session_id: str
    participants: _containers.RepeatedCompositeFieldContainer[Participant]
    retention: _duration_pb2.Duration
    task: str
    thread_key: str
    ttl: _duration_pb2.Duration
    type: str
    def __init__(self, type: _Optional[str] = ..., participants: _Optional[_Iterable[_Union[Participant, _Mapping]]] = ..., labels: _Optional[_Mapping[str, str]] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., invite_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., expectations: _Optional[_Union[Expectations, _Mapping]] = ..., parent_session_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., graph: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., knobs: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., delegates: _Optional[_Iterable[str]] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., thread_key: _Optional[str] = ..., task: _Optional[str] = ..., retention: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class OpenResponse(_message.Message):
    __slots__ = ["existing", "session"]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    existing: bool
    session: SessionInfo
    def __init__(self, session: _Optional[_Union[SessionInfo, _Mapping]] = ..., existing: bool = ...) -> None: ...

class OperatorAction(_message.Message):
    __slots__ = ["context", "next_speaker", "operator", "reason", "release_result", "timer"]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    NEXT_SPEAKER_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RELEASE_RESULT_FIELD_NUMBER: _ClassVar[int]
    TIMER_FIELD_NUMBER: _ClassVar[int]
    context: ContextUpdate
    next_speaker: str
    operator: str
    reason: str
    release_result: str
    timer: TimerChange
    def __init__(self, operator: _Optional[str] = ..., reason: _Optional[str] = ..., context: _Optional[_Union[ContextUpdate, _Mapping]] = ..., next_speaker: _Optional[str] = ..., release_result: _Optional[str] = ..., timer: _Optional[_Union[TimerChange, _Mapping]] = ...) -> None: ...

class Option(_message.Message):
    __slots__ = ["id", "label"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    id: str
    label: str
    def __init__(self, id: _Optional[str] = ..., label: _Optional[str] = ...) -> None: ...

class Packet(_message.Message):
    __slots__ = ["body", "context_updates", "routing", "usage"]
    BODY_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_UPDATES_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    body: str
    context_updates: ContextUpdate
    routing: Routing
    usage: Usage
    def __init__(self, body: _Optional[str] = ..., routing: _Optional[_Union[Routing, _Mapping]] = ..., context_updates: _Optional[_Union[ContextUpdate, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class Participant(_message.Message):
    __slots__ = ["auto_accept", "name", "role"]
    AUTO_ACCEPT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    auto_accept: bool
    name: str
    role: str
    def __init__(self, name: _Optional[str] = ..., role: _Optional[str] = ..., auto_accept: bool = ...) -> None: ...

class PendingQuestion(_message.Message):
    __slots__ = ["asker", "envelope", "session_id"]
    ASKER_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    asker: str
    envelope: Envelope
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., asker: _Optional[str] = ..., envelope: _Optional[_Union[Envelope, _Mapping]] = ...) -> None: ...

class PendingTurnsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class PendingTurnsResponse(_message.Message):
    __slots__ = ["turns"]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[Delivery]
    def __init__(self, turns: _Optional[_Iterable[_Union[Delivery, _Mapping]]] = ...) -> None: ...

class PurgeRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class PurgeResponse(_message.Message):
    __slots__ = ["archive", "purged_at", "session_id"]
    ARCHIVE_FIELD_NUMBER: _ClassVar[int]
    PURGED_AT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    archive: str
    purged_at: _timestamp_pb2.Timestamp
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., purged_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., archive: _Optional[str] = ...) -> None: ...

class Question(_message.Message):
    __slots__ = ["answerer", "default_option", "multiple", "on_deadline", "options", "question_id", "schema", "text", "within"]
    ANSWERER_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_OPTION_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    ON_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    WITHIN_FIELD_NUMBER: _ClassVar[int]
    answerer: str
    default_option: str
    multiple: bool
    on_deadline: str
    options: _containers.RepeatedCompositeFieldContainer[Option]
    question_id: str
    schema: _struct_pb2.Struct
    text: str
    within: _duration_pb2.Duration
    def __init__(self, question_id: _Optional[str] = ..., text: _Optional[str] = ..., options: _Optional[_Iterable[_Union[Option, _Mapping]]] = ..., answerer: _Optional[str] = ..., multiple: bool = ..., schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., within: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., on_deadline: _Optional[str] = ..., default_option: _Optional[str] = ...) -> None: ...

class QuestionClosed(_message.Message):
    __slots__ = ["question_id", "reason"]
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    question_id: str
    reason: str
    def __init__(self, question_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReadLogRequest(_message.Message):
    __slots__ = ["from_seq", "limit", "session_id"]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    from_seq: int
    limit: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., from_seq: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ReadLogResponse(_message.Message):
    __slots__ = ["envelopes", "next_seq"]
    ENVELOPES_FIELD_NUMBER: _ClassVar[int]
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    envelopes: _containers.RepeatedCompositeFieldContainer[Envelope]
    next_seq: int
    def __init__(self, envelopes: _Optional[_Iterable[_Union[Envelope, _Mapping]]] = ..., next_seq: _Optional[int] = ...) -> None: ...

class ReplayRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ReplayResponse(_message.Message):
    __slots__ = ["detail", "equal", "first_difference", "steps"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EQUAL_FIELD_NUMBER: _ClassVar[int]
    FIRST_DIFFERENCE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    detail: str
    equal: bool
    first_difference: int
    steps: _containers.RepeatedCompositeFieldContainer[ReplayStep]
    def __init__(self, steps: _Optional[_Iterable[_Union[ReplayStep, _Mapping]]] = ..., equal: bool = ..., first_difference: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class ReplayStep(_message.Message):
    __slots__ = ["envelope", "expected", "rule", "state", "turn"]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    envelope: Envelope
    expected: _containers.RepeatedScalarFieldContainer[str]
    rule: str
    state: str
    turn: int
    def __init__(self, envelope: _Optional[_Union[Envelope, _Mapping]] = ..., rule: _Optional[str] = ..., expected: _Optional[_Iterable[str]] = ..., turn: _Optional[int] = ..., state: _Optional[str] = ...) -> None: ...

class Routing(_message.Message):
    __slots__ = ["kind", "reason", "summary", "target", "tool"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    kind: str
    reason: str
    summary: str
    target: str
    tool: str
    def __init__(self, kind: _Optional[str] = ..., tool: _Optional[str] = ..., target: _Optional[str] = ..., reason: _Optional[str] = ..., summary: _Optional[str] = ...) -> None: ...

class SendRequest(_message.Message):
    __slots__ = ["envelope", "session_id"]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    envelope: Envelope
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., envelope: _Optional[_Union[Envelope, _Mapping]] = ...) -> None: ...

class SendResponse(_message.Message):
    __slots__ = ["accepted_at", "close_reason", "closed", "duplicate", "id", "seq"]
    ACCEPTED_AT_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    CLOSE_REASON_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    accepted_at: _timestamp_pb2.Timestamp
    close_reason: str
    closed: bool
    duplicate: bool
    id: str
    seq: int
    def __init__(self, seq: _Optional[int] = ..., id: _Optional[str] = ..., accepted_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., duplicate: bool = ..., closed: bool = ..., close_reason: _Optional[str] = ...) -> None: ...

class SendStreamFrame(_message.Message):
    __slots__ = ["delta", "final"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    delta: Delta
    final: SendRequest
    def __init__(self, delta: _Optional[_Union[Delta, _Mapping]] = ..., final: _Optional[_Union[SendRequest, _Mapping]] = ...) -> None: ...

class SessionInfo(_message.Message):
    __slots__ = ["active_agent", "close_reason", "context", "expected", "handoffs", "holds", "last_rule", "meta", "open_children", "responder", "seq", "state", "supervisor", "tree_usage", "turn", "usage"]
    class ContextEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    ACTIVE_AGENT_FIELD_NUMBER: _ClassVar[int]
    CLOSE_REASON_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    HANDOFFS_FIELD_NUMBER: _ClassVar[int]
    HOLDS_FIELD_NUMBER: _ClassVar[int]
    LAST_RULE_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    OPEN_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    RESPONDER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUPERVISOR_FIELD_NUMBER: _ClassVar[int]
    TREE_USAGE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    active_agent: str
    close_reason: str
    context: _containers.MessageMap[str, _struct_pb2.Value]
    expected: _containers.RepeatedScalarFieldContainer[str]
    handoffs: int
    holds: _containers.RepeatedCompositeFieldContainer[Hold]
    last_rule: str
    meta: SessionMeta
    open_children: _containers.RepeatedScalarFieldContainer[str]
    responder: str
    seq: int
    state: str
    supervisor: str
    tree_usage: Usage
    turn: int
    usage: Usage
    def __init__(self, meta: _Optional[_Union[SessionMeta, _Mapping]] = ..., state: _Optional[str] = ..., close_reason: _Optional[str] = ..., seq: _Optional[int] = ..., turn: _Optional[int] = ..., expected: _Optional[_Iterable[str]] = ..., context: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., last_rule: _Optional[str] = ..., active_agent: _Optional[str] = ..., handoffs: _Optional[int] = ..., supervisor: _Optional[str] = ..., holds: _Optional[_Iterable[_Union[Hold, _Mapping]]] = ..., tree_usage: _Optional[_Union[Usage, _Mapping]] = ..., responder: _Optional[str] = ..., open_children: _Optional[_Iterable[str]] = ...) -> None: ...

class SessionMeta(_message.Message):
    __slots__ = ["budget", "created_at", "creator", "delegates", "delegation_id", "depth", "expectations", "forked_from", "invite_timeout", "knobs", "labels", "open_key", "parent_session_id", "participants", "previous_session_id", "responder", "retention", "root_creator", "root_session_id", "session_id", "thread_key", "ttl", "type"]
    class KnobsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATOR_FIELD_NUMBER: _ClassVar[int]
    DELEGATES_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_ID_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    EXPECTATIONS_FIELD_NUMBER: _ClassVar[int]
    FORKED_FROM_FIELD_NUMBER: _ClassVar[int]
    INVITE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    KNOBS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    OPEN_KEY_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANTS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RESPONDER_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    ROOT_CREATOR_FIELD_NUMBER: _ClassVar[int]
    ROOT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_KEY_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    created_at: _timestamp_pb2.Timestamp
    creator: str
    delegates: _containers.RepeatedScalarFieldContainer[str]
    delegation_id: str
    depth: int
    expectations: _containers.RepeatedCompositeFieldContainer[Expectation]
    forked_from: ForkOrigin
    invite_timeout: _duration_pb2.Duration
    knobs: _containers.MessageMap[str, _struct_pb2.Value]
    labels: _containers.ScalarMap[str, str]
    open_key: str
    parent_session_id: str
    participants: _containers.RepeatedCompositeFieldContainer[Participant]
    previous_session_id: str
    responder: str
    retention: _duration_pb2.Duration
    root_creator: str
    root_session_id: str
    session_id: str
    thread_key: str
    ttl: _duration_pb2.Duration
    type: str
    def __init__(self, session_id: _Optional[str] = ..., type: _Optional[str] = ..., creator: _Optional[str] = ..., participants: _Optional[_Iterable[_Union[Participant, _Mapping]]] = ..., knobs: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., labels: _Optional[_Mapping[str, str]] = ..., ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., invite_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., expectations: _Optional[_Iterable[_Union[Expectation, _Mapping]]] = ..., parent_session_id: _Optional[str] = ..., root_session_id: _Optional[str] = ..., depth: _Optional[int] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., open_key: _Optional[str] = ..., delegation_id: _Optional[str] = ..., responder: _Optional[str] = ..., delegates: _Optional[_Iterable[str]] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., thread_key: _Optional[str] = ..., previous_session_id: _Optional[str] = ..., root_creator: _Optional[str] = ..., forked_from: _Optional[_Union[ForkOrigin, _Mapping]] = ..., retention: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class SpeakerCount(_message.Message):
    __slots__ = ["count", "speaker"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    count: int
    speaker: str
    def __init__(self, speaker: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class SteerRequest(_message.Message):
    __slots__ = ["action", "session_id"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    action: OperatorAction
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., action: _Optional[_Union[OperatorAction, _Mapping]] = ...) -> None: ...

class StreamAck(_message.Message):
    __slots__ = ["error", "opened", "ref", "response"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OPENED_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    error: StreamError
    opened: OpenResponse
    ref: int
    response: SendResponse
    def __init__(self, ref: _Optional[int] = ..., response: _Optional[_Union[SendResponse, _Mapping]] = ..., error: _Optional[_Union[StreamError, _Mapping]] = ..., opened: _Optional[_Union[OpenResponse, _Mapping]] = ...) -> None: ...

class StreamError(_message.Message):
    __slots__ = ["code", "message", "metadata", "reason"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    metadata: _containers.ScalarMap[str, str]
    reason: Reason
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., reason: _Optional[_Union[Reason, str]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class StreamOpen(_message.Message):
    __slots__ = ["ref", "request", "traceparent", "tracestate"]
    REF_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    ref: int
    request: OpenRequest
    traceparent: str
    tracestate: str
    def __init__(self, ref: _Optional[int] = ..., request: _Optional[_Union[OpenRequest, _Mapping]] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class StreamReady(_message.Message):
    __slots__ = ["agent", "max_in_flight", "opens"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    MAX_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    OPENS_FIELD_NUMBER: _ClassVar[int]
    agent: str
    max_in_flight: int
    opens: bool
    def __init__(self, agent: _Optional[str] = ..., max_in_flight: _Optional[int] = ..., opens: bool = ...) -> None: ...

class StreamSend(_message.Message):
    __slots__ = ["envelope", "ref", "session_id", "traceparent", "tracestate"]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    envelope: Envelope
    ref: int
    session_id: str
    traceparent: str
    tracestate: str
    def __init__(self, ref: _Optional[int] = ..., session_id: _Optional[str] = ..., envelope: _Optional[_Union[Envelope, _Mapping]] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ["cursors", "deltas", "include_ended", "terse", "turn_view"]
    class CursorsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CURSORS_FIELD_NUMBER: _ClassVar[int]
    DELTAS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ENDED_FIELD_NUMBER: _ClassVar[int]
    TERSE_FIELD_NUMBER: _ClassVar[int]
    TURN_VIEW_FIELD_NUMBER: _ClassVar[int]
    cursors: _containers.ScalarMap[str, int]
    deltas: bool
    include_ended: bool
    terse: bool
    turn_view: GetViewRequest
    def __init__(self, cursors: _Optional[_Mapping[str, int]] = ..., include_ended: bool = ..., turn_view: _Optional[_Union[GetViewRequest, _Mapping]] = ..., terse: bool = ..., deltas: bool = ...) -> None: ...

class TaskProgress(_message.Message):
    __slots__ = ["detail", "percent", "task"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    PERCENT_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    detail: str
    percent: float
    task: str
    def __init__(self, task: _Optional[str] = ..., percent: _Optional[float] = ..., detail: _Optional[str] = ...) -> None: ...

class Text(_message.Message):
    __slots__ = ["text"]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class TimerChange(_message.Message):
    __slots__ = ["cancel", "extend", "name"]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    cancel: bool
    extend: _duration_pb2.Duration
    name: str
    def __init__(self, name: _Optional[str] = ..., extend: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., cancel: bool = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ["arguments", "call_id", "name"]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    arguments: _struct_pb2.Struct
    call_id: str
    name: str
    def __init__(self, call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ["call_id", "error", "name", "result"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    error: str
    name: str
    result: _struct_pb2.Value
    def __init__(self, call_id: _Optional[str] = ..., name: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class TreeNode(_message.Message):
    __slots__ = ["children", "duration", "session", "turns", "usage"]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[TreeNode]
    duration: _duration_pb2.Duration
    session: SessionInfo
    turns: int
    usage: Usage
    def __init__(self, session: _Optional[_Union[SessionInfo, _Mapping]] = ..., turns: _Optional[int] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., children: _Optional[_Iterable[_Union[TreeNode, _Mapping]]] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ["cost_usd", "input_tokens", "output_tokens", "tool_calls"]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    cost_usd: float
    input_tokens: int
    output_tokens: int
    tool_calls: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ..., tool_calls: _Optional[int] = ...) -> None: ...

class View(_message.Message):
    __slots__ = ["items", "name", "older", "older_total", "session_id"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OLDER_FIELD_NUMBER: _ClassVar[int]
    OLDER_TOTAL_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ViewItem]
    name: str
    older: _containers.RepeatedCompositeFieldContainer[SpeakerCount]
    older_total: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ..., items: _Optional[_Iterable[_Union[ViewItem, _Mapping]]] = ..., older: _Optional[_Iterable[_Union[SpeakerCount, _Mapping]]] = ..., older_total: _Optional[int] = ...) -> None: ...

class ViewItem(_message.Message):
    __slots__ = ["at", "seq", "session_id", "text", "type"]
    AT_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    seq: int
    session_id: str
    text: str
    type: str
    def __init__(self, session_id: _Optional[str] = ..., seq: _Optional[int] = ..., type: _Optional[str] = ..., text: _Optional[str] = ..., at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., **kwargs) -> None: ...

class Violation(_message.Message):
    __slots__ = ["action", "detail", "expectation", "index", "question_id", "since", "violators"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EXPECTATION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    QUESTION_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    VIOLATORS_FIELD_NUMBER: _ClassVar[int]
    action: str
    detail: str
    expectation: str
    index: int
    question_id: str
    since: _timestamp_pb2.Timestamp
    violators: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, expectation: _Optional[str] = ..., index: _Optional[int] = ..., action: _Optional[str] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., violators: _Optional[_Iterable[str]] = ..., detail: _Optional[str] = ..., question_id: _Optional[str] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ["cursors", "deltas", "from_seq", "session_id", "tree", "verbose"]
    class CursorsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CURSORS_FIELD_NUMBER: _ClassVar[int]
    DELTAS_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TREE_FIELD_NUMBER: _ClassVar[int]
    VERBOSE_FIELD_NUMBER: _ClassVar[int]
    cursors: _containers.ScalarMap[str, int]
    deltas: bool
    from_seq: int
    session_id: str
    tree: bool
    verbose: bool
    def __init__(self, session_id: _Optional[str] = ..., from_seq: _Optional[int] = ..., tree: bool = ..., verbose: bool = ..., cursors: _Optional[_Mapping[str, int]] = ..., deltas: bool = ...) -> None: ...

class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

// Errors: a refused call is a HubError with the hub's stable reason, its
// message and the gRPC code; one subclass per reason (agentsdk/errors.go has
// one sentinel per reason).

import { Metadata, status } from "@grpc/grpc-js";

import { ErrorInfo, Status } from "./gen/google/rpc/status.js";
import { Reason, type StreamError } from "./gen/hub.js";

/** The google.rpc.ErrorInfo domain of the hub's errors. */
export const ErrorDomain = "hubd";

/** The trailer that carries a google.rpc.Status with the ErrorInfo. */
const detailsTrailer = "grpc-status-details-bin";

/** The name of a stable reason of the hub: a hubd.v1.Reason value ("OUT_OF_TURN", ...). */
export type ReasonName = Exclude<keyof typeof Reason, "REASON_UNSPECIFIED" | "UNRECOGNIZED">;

/**
 * A call the hub refused, or that failed on the way. It keeps the hub's
 * message (detail), its stable reason and the gRPC code. Each reason has its
 * subclass (OutOfTurnError, SessionClosedError, ...), so a caller branches
 * with instanceof, or on `reason`:
 *
 *     try { await c.sendText(id, "hi") } catch (e) {
 *       if (e instanceof OutOfTurnError) { ... } // workflow expects "bob" to speak, got "carol"
 *     }
 */
export class HubError extends Error {
  /** The call that failed ("send", "open", "subscribe", ...). */
  readonly op: string;
  /** The gRPC status code (grpc.status). */
  readonly code: status;
  /** The hub's stable reason ("OUT_OF_TURN", ...); "" for an error gRPC made itself (a broken connection). */
  readonly reason: ReasonName | "";
  /** The hub's message, e.g. `workflow expects "bob" to speak, got "carol"`. */
  readonly detail: string;
  /** The trailing metadata of the call, when there was one. */
  readonly metadata?: Metadata;

  constructor(op: string, code: status, reason: ReasonName | "", detail: string, metadata?: Metadata) {
    super(`hubd: ${op}: ${detail} (${reason || status[code] || code})`);
    this.name = new.target.name;
    this.op = op;
    this.code = code;
    this.reason = reason;
    this.detail = detail;
    this.metadata = metadata;
  }
}

/** The caller is a participant but not the one expected to speak (OUT_OF_TURN). */
export class OutOfTurnError extends HubError {}
/** The caller does not take part in the session (NOT_PARTICIPANT). */
export class NotParticipantError extends HubError {}
/** The session has ended and accepts nothing more (SESSION_CLOSED). */
export class SessionClosedError extends HubError {}
/** The session is still waiting for invite acknowledgements (SESSION_NOT_OPEN). */
export class SessionNotOpenError extends HubError {}
/** A handoff names an agent that cannot take the turn; the message lists the valid targets (BAD_HANDOFF_TARGET). */
export class BadHandoffTargetError extends HubError {}
/** A request or payload is malformed; the message names the field (MALFORMED). */
export class MalformedError extends HubError {}
/** The workflow graph is refused; the message names the offending node (INVALID_GRAPH). */
export class InvalidGraphError extends HubError {}
/** The hub serves no such session type (UNKNOWN_SESSION_TYPE). */
export class UnknownSessionTypeError extends HubError {}
/** The session's lifecycle does not allow this, e.g. acknowledging an invite twice (BAD_LIFECYCLE_TRANSITION). */
export class BadLifecycleTransitionError extends HubError {}
/** The event type is written by the hub only (HUB_ONLY_EVENT). */
export class HubOnlyEventError extends HubError {}
/** No session has that id (UNKNOWN_SESSION). */
export class UnknownSessionError extends HubError {}
/**
 * The envelope (or request) is over the hub's size limit (TOO_LARGE), or
 * over gRPC's own cap on one message: gRPC refuses that itself, before the
 * hub sees it (RESOURCE_EXHAUSTED with reason ""), and the detail then
 * names the message's size and the limit.
 */
export class TooLargeError extends HubError {}
/** The caller may not do this, e.g. close a session it did not create (PERMISSION_DENIED). */
export class PermissionDeniedError extends HubError {}
/** A per-agent limit is reached, e.g. open sessions (LIMIT_REACHED). */
export class LimitReachedError extends HubError {}
/** A child session would be deeper than the hub allows (DEPTH_EXCEEDED). */
export class DepthExceededError extends HubError {}
/**
 * The hub cannot serve the call now: it is shutting down (DrainingError),
 * a session failed to write its log (SessionFailedError), or the connection
 * is down (gRPC UNAVAILABLE, reason ""). Retry.
 */
export class UnavailableError extends HubError {}
/** The session's log could not be written or read; retry (SESSION_FAILED). */
export class SessionFailedError extends UnavailableError {}
/** The hub is shutting down; reconnect (DRAINING). */
export class DrainingError extends UnavailableError {}
/** The hub cut a stream off because its reader fell behind; resubscribe from the cursors (SLOW_SUBSCRIBER). */
export class SlowSubscriberError extends HubError {}
/** The hub does not know the caller (UNAUTHENTICATED, or the gRPC code). */
export class UnauthenticatedError extends HubError {}
/** An envelope names a sender other than the caller (IMPERSONATION). */
export class ImpersonationError extends HubError {}
/** The call was cancelled (CANCELED, or the gRPC code: an aborted signal). */
export class CanceledError extends HubError {}
/** The call's deadline passed (DEADLINE_EXCEEDED, or the gRPC code). */
export class DeadlineExceededError extends HubError {}
/** The hub failed in a way it did not expect; it logged it (INTERNAL). */
export class InternalError extends HubError {}
/** The hub's disk is below its reserve: writes are refused until space returns; reads go on (DISK_FULL). Not retried. */
export class DiskFullError extends HubError {}
/** The hub cannot make a write durable on its storage; every write is refused until an operator acts (STORAGE_FAILED). Not retried. */
export class StorageFailedError extends HubError {}
/** An operator action whose object is not there now: no held turn to release, no running period of the expectation named (NOTHING_TO_STEER). */
export class NothingToSteerError extends HubError {}
/**
 * The session was purged by its retention or an operator: its records are
 * gone from the hub's log (PURGED). errorInfoFromMetadata(err.metadata)
 * gives "purged_at" (RFC 3339) and "archive" (the archive file; "" when
 * purged without one). Not retried.
 */
export class PurgedError extends HubError {}

/**
 * The session was erased on an operator's request: its content is gone
 * from the hub (ERASED). errorInfoFromMetadata(err.metadata) gives
 * "erased_at" (RFC 3339), "erased_by" and "reason". Not retried.
 */
export class ErasedError extends HubError {}
/** The turn is held: its holder waits for a child session or an answer (TURN_HELD). */
export class TurnHeldError extends HubError {}
/** The delegate is not in the parent session's allow-list (DELEGATE_NOT_ALLOWED). */
export class DelegateNotAllowedError extends HubError {}
/** The answer does not fit its question (BAD_ANSWER). */
export class BadAnswerError extends HubError {}
/** An open reused an idempotency key of an earlier one with other parameters: use a new key (IDEMPOTENCY_CONFLICT). */
export class IdempotencyConflictError extends HubError {}
/** The session's log is damaged; it serves nothing until an operator restores it (QUARANTINED). Not retried. */
export class QuarantinedError extends HubError {}
/**
 * In a cluster, the node that serves the session's partition could not be reached at the moment: the partition
 * changes hands, or its node died (NOT_OWNER). Retry shortly with the same client message id (the node asked
 * already waited for an owner, within the call's deadline).
 */
export class NotOwnerError extends UnavailableError {}

type ErrorClass = new (op: string, code: status, reason: ReasonName | "", detail: string, metadata?: Metadata) => HubError;

/** The class of each stable reason; a test checks that every Reason value has one. */
export const errorClasses: Record<ReasonName, ErrorClass> = {
  OUT_OF_TURN: OutOfTurnError,
  NOT_PARTICIPANT: NotParticipantError,
  SESSION_CLOSED: SessionClosedError,
  SESSION_NOT_OPEN: SessionNotOpenError,
  BAD_HANDOFF_TARGET: BadHandoffTargetError,
  MALFORMED: MalformedError,
  INVALID_GRAPH: InvalidGraphError,
  UNKNOWN_SESSION_TYPE: UnknownSessionTypeError,
  BAD_LIFECYCLE_TRANSITION: BadLifecycleTransitionError,
  HUB_ONLY_EVENT: HubOnlyEventError,
  UNKNOWN_SESSION: UnknownSessionError,
  TOO_LARGE: TooLargeError,
  PERMISSION_DENIED: PermissionDeniedError,
  LIMIT_REACHED: LimitReachedError,
  DEPTH_EXCEEDED: DepthExceededError,
  SESSION_FAILED: SessionFailedError,
  DRAINING: DrainingError,
  SLOW_SUBSCRIBER: SlowSubscriberError,
  UNAUTHENTICATED: UnauthenticatedError,
  IMPERSONATION: ImpersonationError,
  CANCELED: CanceledError,
  DEADLINE_EXCEEDED: DeadlineExceededError,
  INTERNAL: InternalError,
  DISK_FULL: DiskFullError,
  TURN_HELD: TurnHeldError,
  DELEGATE_NOT_ALLOWED: DelegateNotAllowedError,
  BAD_ANSWER: BadAnswerError,
  IDEMPOTENCY_CONFLICT: IdempotencyConflictError,
  QUARANTINED: QuarantinedError,
  NOT_OWNER: NotOwnerError,
  STORAGE_FAILED: StorageFailedError,
  NOTHING_TO_STEER: NothingToSteerError,
  PURGED: PurgedError,
  ERASED: ErasedError,
};

/** The class of an error without a hub reason (one gRPC made itself), by its code. */
function classOfCode(code: status): ErrorClass {
  switch (code) {
    case status.UNAVAILABLE:
      return UnavailableError;
    case status.UNAUTHENTICATED:
      return UnauthenticatedError;
    case status.CANCELLED:
      return CanceledError;
    case status.DEADLINE_EXCEEDED:
      return DeadlineExceededError;
    case status.RESOURCE_EXHAUSTED:
      // gRPC's own refusal of a message over its size cap, before the hub saw it.
      return TooLargeError;
  }
  return HubError;
}

function isReasonName(r: string): r is ReasonName {
  return Object.prototype.hasOwnProperty.call(errorClasses, r);
}

/**
 * The hub's ErrorInfo in a call's trailing metadata: the reason of the
 * google.rpc.Status in grpc-status-details-bin whose ErrorInfo has domain
 * "hubd"; "" when there is none.
 */
export function reasonFromMetadata(md: Metadata | undefined): string {
  return errorInfoFromMetadata(md).reason;
}

/**
 * The hub's ErrorInfo in a call's trailing metadata: its reason and its
 * metadata (NOT_OWNER: owner_addr, owner_node, partition); reason "" when
 * there is none.
 */
export function errorInfoFromMetadata(md: Metadata | undefined): { reason: string; metadata: Record<string, string> } {
  for (const bin of md?.get(detailsTrailer) ?? []) {
    if (typeof bin === "string") {
      continue;
    }
    let st: Status;
    try {
      st = Status.decode(bin);
    } catch {
      continue;
    }
    for (const d of st.details) {
      if (!d.typeUrl.endsWith("/google.rpc.ErrorInfo")) {
        continue;
      }
      const info = ErrorInfo.decode(d.value);
      if (info.domain === ErrorDomain) {
        return { reason: info.reason, metadata: { ...info.metadata } };
      }
    }
  }
  return { reason: "", metadata: {} };
}

/** A gRPC error as @grpc/grpc-js reports it. */
interface ServiceErrorLike {
  code: number;
  details?: string;
  message?: string;
  metadata?: Metadata;
}

function isServiceError(err: unknown): err is ServiceErrorLike {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "number";
}

/**
 * hubError turns a gRPC call's error into a HubError of the class of its
 * reason (or, without a reason, of its code); anything else (a local
 * failure) is returned as it is. deadline (ms since the epoch) is the
 * call's, when it had one.
 */
export function hubError(op: string, err: unknown, deadline?: number): unknown {
  if (err instanceof HubError || !isServiceError(err)) {
    return err;
  }
  const reason = reasonFromMetadata(err.metadata);
  if (reason === "" && err.code === status.CANCELLED && deadline !== undefined && Date.now() >= deadline) {
    // The server may reset a stream at the deadline before the client's own
    // timer fires: grpc-js then reports CANCELLED ("Call cancelled").
    return new DeadlineExceededError(op, status.DEADLINE_EXCEEDED, "", `deadline exceeded (${err.details ?? ""})`, err.metadata);
  }
  const name: ReasonName | "" = isReasonName(reason) ? reason : "";
  const cls = name ? errorClasses[name] : classOfCode(err.code);
  let detail = err.details ?? err.message ?? "";
  if (cls === TooLargeError && reason === "") {
    detail = overCap(detail);
  }
  // An unknown reason (a newer hub) is kept on a plain HubError.
  return new cls(op, err.code, (name || reason) as ReasonName | "", detail, err.metadata);
}

/**
 * The detail of gRPC's own refusal of a message over its size cap
 * ("grpc: received message larger than max (N vs. M)", "Received message
 * larger than max (N vs M)", "... with a size larger than M"), with the
 * size and the limit named first; any other detail as it is.
 */
function overCap(detail: string): string {
  const both = /larger than max \((\d+) vs\.? (\d+)\)/.exec(detail);
  if (both) {
    return `the message is ${both[1]} bytes, over gRPC's limit of ${both[2]} bytes per message (${detail})`;
  }
  const limit = /larger than (\d+)/.exec(detail);
  if (limit) {
    return `the message is over gRPC's limit of ${limit[1]} bytes per message (${detail})`;
  }
  return detail;
}

/**
 * The error of a send that the hub refused on an agent stream (a
 * StreamAck's error): exactly the HubError a Send call would have rejected
 * with, of the same class, code, message and reason, its metadata carrying
 * the same grpc-status-details-bin trailer (ErrorInfo with its metadata:
 * NOT_OWNER's owner_addr, ...).
 */
export function streamError(op: string, se: StreamError): unknown {
  const md = new Metadata();
  const reason = Reason[se.reason];
  if (se.reason !== Reason.REASON_UNSPECIFIED && reason !== undefined) {
    const info = ErrorInfo.encode({ reason, domain: ErrorDomain, metadata: { ...se.metadata } }).finish();
    const st = Status.encode({
      code: se.code,
      message: se.message,
      details: [{ typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: Buffer.from(info) }],
    }).finish();
    md.set(detailsTrailer, Buffer.from(st));
  }
  const err = Object.assign(new Error(`${se.code} ${status[se.code] ?? ""}: ${se.message}`), {
    code: se.code,
    details: se.message,
    metadata: md,
  });
  return hubError(op, err);
}

/** The hub's stable reason of err ("OUT_OF_TURN", ...), or undefined when it carries none. */
export function reasonOf(err: unknown): string | undefined {
  return err instanceof HubError && err.reason !== "" ? err.reason : undefined;
}

/**
 * Whether a failed call may succeed if repeated as it is: the hub or the
 * connection was unavailable, or a stream was cut off as slow.
 */
export function retryable(err: unknown): boolean {
  if (!(err instanceof HubError)) {
    return false;
  }
  if (err instanceof UnavailableError || err instanceof SlowSubscriberError) {
    return true;
  }
  // gRPC's own transport failures (a reset stream, a server gone mid-stream).
  return err.reason === "" && (err.code === status.INTERNAL || err.code === status.UNKNOWN || err.code === status.ABORTED);
}

/**
 * @hubd/sdk: the TypeScript client of hubd, the session hub for multi-agent
 * systems. An agent connects to the hub, opens sessions with other agents,
 * takes its turns, and reads what the others said.
 *
 *     import { Client, sequence } from "@hubd/sdk";
 *     const c = await Client.connect("127.0.0.1:7420", { name: "writer" });
 *     await c.serve((turn) => `Draft on ${turn.text()}`, { signal });
 *
 * The SDK speaks the hub's own messages (hubpb/hub.proto, generated into
 * ./gen with ts-proto): envelopes, deliveries, views and session info are
 * plain objects with camelCase fields. It has the surface of the Go SDK
 * (agentsdk): Client (connect, open, send, read, subscribe, watch, follow,
 * serve), the graph builders (byte-identical JSON), Packet, one error
 * class per stable reason of the hub, and delegation, questions and the
 * call tree (turn.delegate, spawn, ask, passCaller; Task; awaitAll,
 * awaitAny; Client.answerQuestion, listQuestions, tree, followTree),
 * forks and operator actions (Client.fork, Client.steer with a
 * SteerAction).
 */

export {
  AgentHeader,
  autoAccepted,
  Client,
  expect,
  invited,
  isLoopback,
  openRequest,
  Session,
  SessionType,
  State,
  ViewName,
  type Ack,
  type CallOptions,
  type ClientOptions,
  type ListOptions,
  type OpenOptions,
  type SendOptions,
  type SubscribeOptions,
  type TLSOptions,
  type ViewOptions,
} from "./client.js";
export { MaxStreamEnvelope, Transport, type TransportName } from "./connect.js";
export {
  cancelTimerAction,
  extendTimerAction,
  nextSpeakerAction,
  releaseTurnAction,
  setContextAction,
  unsetContextAction,
  type ForkEdits,
  type SteerAction,
} from "./ops.js";
export {
  awaitAll,
  awaitAny,
  AwaitChildren,
  CancelReason,
  DelegateMode,
  NotifyTurn,
  Task,
  TaskState,
  turnOf,
  WithdrawnError,
  type DelegateOptions,
  type OptionInput,
  type QuestionInput,
  type SpawnOptions,
  type TaskStatus,
  type WaitOptions,
} from "./calls.js";
export {
  closeReason,
  ends,
  EventType,
  isTurn,
  newPacket,
  Packet,
  RoutingKind,
  textOf,
  turnMsgId,
  contextUpdateProto,
  type ContextUpdate,
} from "./envelope.js";
export * from "./errors.js";
export {
  allOf,
  always,
  anyOf,
  Condition,
  contextCompare,
  contextEquals,
  contextIn,
  customCondition,
  customTarget,
  eventTypeIs,
  fromSpeaker,
  Graph,
  mentions,
  not,
  revertToInitiator,
  roundRobin,
  sequence,
  stay,
  supervisor,
  Target,
  terminate,
  toActiveAgent,
  toAgent,
  toMentioned,
  toNextInOrder,
  toolCalled,
  toSupervisor,
  turnCountAtLeast,
  type Args,
  type SupervisorSpec,
  type Transition,
} from "./graph.js";
export { withTraceContext, type TraceContext } from "./trace.js";
export { DeliveryStream } from "./stream.js";
export { TurnStream } from "./delta.js";
export {
  replyPacket,
  replyText,
  type Handler,
  type HandlerResult,
  type Invite,
  type Reply,
  type ServeOptions,
  type Turn,
} from "./serve.js";
/** The hub's messages, generated from hubpb/hub.proto. */
export * as hubpb from "./gen/hub.js";
export type {
  Answer,
  DelegationResult,
  Delivery,
  Envelope,
  ImportedSession,
  PendingQuestion,
  PurgeResponse,
  Question,
  ReplayResponse,
  SessionInfo,
  TreeNode,
  Usage,
  View,
} from "./gen/hub.js";
export { Reason } from "./gen/hub.js";
export { HubClient, HubService } from "./gen/hub_service.js";
/** The minimal google.rpc Status and ErrorInfo messages the errors are read with. */
export * as googleRpc from "./gen/google/rpc/status.js";

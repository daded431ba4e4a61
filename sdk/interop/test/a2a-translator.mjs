// An outside A2A agent built with @a2a-js/sdk's server (DefaultRequestHandler
// behind express's jsonRpcHandler): it asks which language once
// (TASK_STATE_INPUT_REQUIRED), then completes the task with a text artifact.
// startTranslator() serves it on a free loopback port.
import express from "express";
import { TaskState, Role } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });
const textOf = (m) => (m?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const agentMessage = (taskId, contextId, s) => ({
  messageId: `${taskId}-${Date.now()}`, contextId, taskId, role: Role.ROLE_AGENT, parts: [text(s)],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const status = (state, message) => ({ state, message, timestamp: new Date().toISOString() });

class Translator {
  constructor(hold) {
    this.hold = hold; // a promise the translation waits for, if any
    this.received = []; // the message ids it was sent, in order
  }

  async execute(ctx, bus) {
    this.received.push(ctx.userMessage.messageId);
    const { taskId, contextId, task, userMessage } = ctx;
    if (!task) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED),
        artifacts: [], history: [userMessage], metadata: undefined }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, metadata: undefined,
        status: status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(taskId, contextId, "Which language?")) }));
      bus.finished();
      return;
    }
    bus.publish(AgentEvent.task(task));
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, metadata: undefined,
      status: status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, "translating")) }));
    await this.hold;
    const original = textOf(task.history?.[0]);
    bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: "translation", name: "translation", description: "", parts: [text(`[${original}] in ${textOf(userMessage)}`)],
        metadata: undefined, extensions: [] } }));
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, metadata: undefined, status: status(TaskState.TASK_STATE_COMPLETED) }));
    bus.finished();
  }

  async cancelTask() {}
}

// startTranslator serves the agent; resolves with its card URL, the message
// ids it received, and a stop. With hold, it stays working after the answer
// until release is called.
export async function startTranslator({ hold = false } = {}) {
  let release = () => {};
  const held = hold ? new Promise((r) => { release = r; }) : undefined;
  const translator = new Translator(held);
  const app = express();
  const server = await new Promise((resolve) => { const s = app.listen(0, "127.0.0.1", () => resolve(s)); });
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: "translator", description: "Translates a text into a language it asks for.", version: "1.0.0",
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
    skills: [{ id: "translate", name: "Translate", description: "Translates a text.", tags: ["translation"], examples: [],
      inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), translator);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return {
    card: `${base}/.well-known/agent-card.json`,
    received: translator.received,
    release,
    stop: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

// MCP servers at the gateway, second half (docs/gateway.md#mcp-servers): the JSON-RPC body posted to an MCP
// server is read (whole, up to MCP_BODY_LIMIT, then forwarded as it came) and every tools/call in it judged
// against the agent's grant: a tool outside it, or arguments that break its globs, is answered -32010 by the
// gateway and nothing is forwarded; an `ask` tool is held for a person (the approval hold of approval.ts, showing
// the tool and its arguments, bound to their SHA-256) and answered -32011 when not approved. A batch goes or is
// answered whole. Every other method, and every request that is not a POST, passes as is. A body sent elsewhere on
// a server's host (mcp.ts) is judged the same way when it may be JSON at all, under every grant it may fall under.
import {
  CALL_NOT_APPROVED,
  INVALID_PARAMS,
  INVALID_REQUEST,
  jsonRpcError,
  MCP_BODY_LIMIT,
  mayBeJsonRpc,
  PARSE_ERROR,
  readJsonRpcBody,
  sseMessageEvent,
  toolCallOf,
  TOOL_REFUSED,
  type JsonObject,
  type JsonRpcMessage,
  type JsonValue,
  type ToolCall,
} from "../../core/jsonRpc.ts";
import { isSensitiveKey } from "../../core/approvalPreview.ts";
import { argumentsHash, argumentsPreview, argumentViolation } from "../../core/mcpArguments.ts";
import { countMcpCall } from "../../observability/metrics.ts";
import type { RememberedApprovals } from "../rememberedApprovals.ts";
import { gatewayJson } from "../errors.ts";
import { requestLogFieldsOf, writeRequestLog } from "../requestLog.ts";
import type { McpExchange, ProxyRequest } from "../request.ts";
import type { CompiledMcpServer } from "../snapshot.ts";
import { answer, PASS, proceedAs, type RequestVerdict, type Stage } from "../stage.ts";
import { holdRequest, type ApprovalDeps } from "./approval.ts";
import type { McpSessions } from "./mcpSessions.ts";

export interface McpToolsDeps extends Pick<ApprovalDeps, "approvals" | "requestLogs"> {
  remembered: Pick<RememberedApprovals, "allows">;
  sessions: McpSessions;
}

type CallVerdict = { kind: "allow" } | { kind: "ask" } | { kind: "refuse"; code: number; message: string };

const ALLOW: CallVerdict = { kind: "allow" };
const ASK: CallVerdict = { kind: "ask" };

function notGranted(name: string): CallVerdict {
  return { kind: "refuse", code: TOOL_REFUSED, message: `credgate: tool ${name} is not granted to this agent` };
}

/** A tool call under a server's grant for this agent (docs/gateway.md#mcp-servers). */
export function judgeCall(grant: CompiledMcpServer["grant"], call: ToolCall): CallVerdict {
  if (grant === null) return notGranted(call.name);
  if (grant.access === "full") return ALLOW;
  const asks = grant.ask.has(call.name);
  if (!asks && !grant.allow.has(call.name)) return notGranted(call.name);
  // An own property only: a tool named `constructor` or `__proto__` must not find Object.prototype's.
  const globs = Object.prototype.hasOwnProperty.call(grant.arguments, call.name) ? grant.arguments[call.name] : undefined;
  if (globs !== undefined) {
    const broken = argumentViolation(call.arguments, globs);
    if (broken !== null) return { kind: "refuse", code: TOOL_REFUSED, message: `credgate: tool ${call.name} arguments are not allowed: ${broken}` };
  }
  return asks ? ASK : ALLOW;
}

/** A tool call under every grant that may apply: refused by one, refused; held when one asks. */
function judgeUnder(judges: readonly CompiledMcpServer[], call: ToolCall): CallVerdict {
  let verdict = ALLOW;
  for (const server of judges) {
    const one = judgeCall(server.grant, call);
    if (one.kind === "refuse") return one;
    if (one.kind === "ask") verdict = ASK;
  }
  return verdict;
}

/** How much of a body elsewhere on a server's host is read first, to tell whether it may be JSON. */
const HEAD_BYTES = 1024;

/** The remembered-approval key of a tool call: per server, tool and arguments (`*`: any arguments). */
export function mcpRuleId(serverId: string, tool: string, hash: string | "*"): string {
  return `mcp:${serverId}:${tool}:${hash}`;
}

/** The arguments as a reviewer sees them: values of credential-like keys masked (docs/policy.md#approvals). */
function redacted(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(redacted);
  if (v !== null && typeof v === "object") {
    const out: JsonObject = {};
    for (const k of Object.keys(v)) out[k] = isSensitiveKey(k) ? "***" : redacted(v[k]!);
    return out;
  }
  return v;
}

interface Refusal {
  message: JsonRpcMessage;
  code: number;
  text: string;
}

const APPROVED = proceedAs("approval_approved");
const REMEMBERED = proceedAs("approved_by_memory");
const NOT_IN_BATCH = "credgate: the batch was not forwarded: another call in it was refused";

export function mcpToolsStage(deps: McpToolsDeps): Stage {
  const { remembered, sessions, requestLogs } = deps;

  /** The gateway's answer to a body it will not forward: one error per request, as the client expects it. */
  function refuse(rq: ProxyRequest, decision: "blocked" | "approval_denied" | "approval_expired", messages: readonly JsonRpcMessage[], batch: boolean, refusals: readonly Refusal[]): RequestVerdict {
    const errors = [];
    for (const m of messages) {
      const own = refusals.find((r) => r.message === m);
      if (own) errors.push(jsonRpcError(m.id, own.code, own.text));
      else if (m.id !== null && m.method !== null) errors.push(jsonRpcError(m.id, TOOL_REFUSED, NOT_IN_BATCH));
    }
    return answer(decision, rpcAnswer(rq, batch ? errors : errors[0] ?? null));
  }

  /** An error answer in the transport the client expects (docs/gateway.md#mcp-servers). */
  function rpcAnswer(rq: ProxyRequest, body: unknown, status = 200): Response {
    const mcp = rq.mcp!;
    // An HTTP+SSE session: answers travel on its stream; the POST itself is accepted, as the server would.
    const stream = status === 200 && mcp.endpoint !== null ? sessions.stream(mcp.server.id, mcp.endpoint, rq.agent.id) : null;
    if (stream !== null && body !== null) {
      for (const m of Array.isArray(body) ? body : [body]) stream.inject(sseMessageEvent(m));
      return gatewayJson(202, body as Record<string, unknown>);
    }
    if (body === null) return new Response(null, { status: 202 });
    // Off the server's URL (an HTTP+SSE message endpoint) with the session's stream in another process, or none:
    // that transport's clients read a POST's answer only when it fails, so the refusal fails it, and says why.
    if (status === 200 && mcp.via !== "url") return gatewayJson(403, body as Record<string, unknown>);
    const accept = (rq.agentHeaders.get("accept") ?? "").toLowerCase();
    const sse = accept.includes("text/event-stream") && !accept.includes("application/json") && !accept.includes("*/*");
    if (sse) return new Response(sseMessageEvent(body), { status, headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
    return gatewayJson(status, body as Record<string, unknown>);
  }

  function bodyRefused(rq: ProxyRequest, status: number, code: number, message: string): RequestVerdict {
    return answer("blocked", rpcAnswer(rq, jsonRpcError(null, code, message), status));
  }

  async function judge(rq: ProxyRequest, mcp: McpExchange): Promise<RequestVerdict> {
    // A body the server would decode and credgate could not read is not forwarded.
    const coding = rq.agentHeaders.get("content-encoding");
    if (coding !== null && coding.trim().toLowerCase() !== "identity") {
      return bodyRefused(rq, 415, PARSE_ERROR, `credgate: an MCP request body must not be encoded (content-encoding: ${coding.slice(0, 40)})`);
    }
    // Elsewhere on the host, a body no JSON parser reads a message from is no MCP message: it goes as it came.
    if (mcp.via === "host" && !mayBeJsonRpc(await rq.peekBody(HEAD_BYTES))) return PASS;
    const tooLarge = `credgate: an MCP request body is read whole to judge it, up to ${MCP_BODY_LIMIT} bytes; this one is larger and was not forwarded`;
    const declared = Number(rq.agentHeaders.get("content-length") ?? "0");
    if (declared > MCP_BODY_LIMIT) return bodyRefused(rq, 413, INVALID_REQUEST, tooLarge);
    const bytes = await rq.peekBody(MCP_BODY_LIMIT + 1);
    if (bytes.byteLength > MCP_BODY_LIMIT) return bodyRefused(rq, 413, INVALID_REQUEST, tooLarge);
    if (bytes.byteLength === 0) return PASS;
    const read = readJsonRpcBody(bytes);
    if (!read.ok) return bodyRefused(rq, 400, read.code, read.message);

    const refusals: Refusal[] = [];
    const asks: { message: JsonRpcMessage; call: ToolCall }[] = [];
    const tools: string[] = [];
    let listIds: Set<string | number> | null = null;
    for (const message of read.messages) {
      if (message.kind === "tools/list") {
        // Asked with any id, or none (a lenient server may answer that too): the JSON answer is read.
        listIds ??= new Set();
        if (message.id !== null) listIds.add(message.id);
        continue;
      }
      if (message.kind !== "tools/call") continue;
      const parsed = toolCallOf(message);
      if (!parsed.ok) {
        refusals.push({ message, code: INVALID_PARAMS, text: parsed.message });
        continue;
      }
      tools.push(parsed.call.name);
      const verdict = judgeUnder(mcp.judges, parsed.call);
      if (verdict.kind === "refuse") refusals.push({ message, code: verdict.code, text: verdict.message });
      else if (verdict.kind === "ask") asks.push({ message, call: parsed.call });
    }
    mcp.tools = tools;
    mcp.listIds = listIds;
    if (asks.length > 1) {
      for (const a of asks) refusals.push({ message: a.message, code: TOOL_REFUSED, text: `credgate: a batch may hold one call for approval; send ${a.call.name} on its own` });
    }
    if (refusals.length > 0) {
      return refuse(rq, "blocked", read.messages, read.batch, refusals);
    }
    if (asks.length === 0) return PASS;
    return hold(rq, mcp, asks[0]!.call, asks[0]!.message, read.messages, read.batch);
  }

  async function hold(rq: ProxyRequest, mcp: McpExchange, call: ToolCall, message: JsonRpcMessage, messages: readonly JsonRpcMessage[], batch: boolean): Promise<RequestVerdict> {
    const server = mcp.server;
    const hash = argumentsHash(call.arguments);
    const ruleId = mcpRuleId(server.id, call.name, hash);
    if (remembered.allows(rq.agent.id, ruleId) || remembered.allows(rq.agent.id, mcpRuleId(server.id, call.name, "*"))) return REMEMBERED;
    const preview = argumentsPreview(redacted(call.arguments) as JsonObject);
    const held = await holdRequest(deps, rq, {
      method: "MCP",
      path: call.name,
      summary: {
        action: `MCP tool call: ${call.name}`.slice(0, 240),
        details: [
          { label: "Server", value: server.name.slice(0, 240) },
          { label: "Tool", value: call.name.slice(0, 240) },
          { label: "Arguments", value: preview.length > 240 ? `${preview.slice(0, 239)}…` : preview },
        ],
      },
      bodyPreview: preview,
      rule: { logicalId: ruleId, name: `MCP ${server.name}: ${call.name}`.slice(0, 200) },
    });
    if ("failed" in held) return held.failed;
    switch (held.outcome) {
      case "approved":
        return APPROVED;
      case "denied":
      case "expired":
        return refuse(rq, held.outcome === "denied" ? "approval_denied" : "approval_expired", messages, batch, [
          { message, code: CALL_NOT_APPROVED, text: `credgate: the call to ${call.name} was not approved` },
        ]);
      case "cancelled":
        return answer(
          "approval_cancelled",
          gatewayJson(
            503,
            { error: "gateway_restarting", message: "credgate gateway is restarting and released this request before it was reviewed. Retry it.", approval_id: held.id },
            { "retry-after": "1" },
          ),
        );
    }
  }

  return {
    name: "mcp-tools",
    reads: ["agent", "mcp"],
    provides: [],
    request(rq) {
      const mcp = rq.mcp;
      // Every body sent to the server is judged, whatever the method says (a lenient server may read a PUT's).
      if (mcp === null || rq.body === null) return PASS;
      return judge(rq, mcp);
    },
    response(rq, reply) {
      const mcp = rq.mcp;
      if (mcp === null || mcp.tools.length === 0) return reply;
      // One log row per tools/call: the request's own row is the first call's, the others get theirs here.
      for (let i = 0; i < mcp.tools.length; i++) {
        const tool = mcp.tools[i]!;
        countMcpCall(mcp.server.name, tool, rq.decision);
        if (i > 0) writeRequestLog(requestLogs, { ...requestLogFieldsOf(rq, reply.status), path: tool });
      }
      return reply;
    },
  };
}

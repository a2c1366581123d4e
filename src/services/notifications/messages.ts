// The HTTP request each channel kind receives for an event (docs/policy.md#notifications). Pure: no I/O.
// - webhook: the JSON payload, signed (X-Credgate-Signature), with X-Credgate-Event and X-Credgate-Delivery.
// - slack: an incoming-webhook message, `text` (the notification's fallback) plus Block Kit `blocks`; an
//   approval request gets Approve and Deny url buttons (the approval links).
// - ntfy: a plain-text body with Title, Priority, Tags and, for an approval request, Actions headers.
// Everything an agent controls (path, summary, names) is escaped for where it goes, and cut to the vendors' limits.
import { webhookSignature } from "../../crypto/webhookSignature.ts";
import type { ApprovalDecidedData, ApprovalRequestedData, BudgetThresholdData, ChannelTarget, DecidedBy, Payload, TestData } from "./events.ts";
import { VERSION } from "../../runtime/version.ts";

export interface ChannelRequest {
  headers: Record<string, string>;
  body: string;
}

/** A notification as people read it, whatever the channel. */
interface Readable {
  title: string;
  lines: string[];
  /** Approve and deny links (approval requests only). */
  links: { approveUrl: string; denyUrl: string } | null;
  /** ntfy priority: 1 (min) … 5 (max). */
  priority: number;
  /** ntfy tags (emoji short codes). */
  tags: string[];
}

const cut = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);

const usd = (cents: number) => `$${(cents / 100).toFixed(2)}`;

function decider(by: DecidedBy): string {
  if ("kind" in by) return "an approval link";
  return by.email ?? "an API key";
}

function readable(payload: Payload): Readable {
  switch (payload.event) {
    case "approval.requested": {
      const d = payload.data as ApprovalRequestedData;
      const details = (d.summary?.details ?? []).map((x) => `${x.label}: ${x.value}`);
      return {
        title: `Approval needed: ${d.method} ${d.host}${d.path}`,
        lines: [`Agent: ${d.agent.name}`, ...(d.summary ? [d.summary.action] : []), ...details, `Expires: ${d.expiresAt}`],
        links: { approveUrl: d.approveUrl, denyUrl: d.denyUrl },
        priority: 4,
        tags: ["warning"],
      };
    }
    case "approval.decided": {
      const d = payload.data as ApprovalDecidedData;
      const verb = d.decision === "approve" ? "Approved" : "Denied";
      return {
        title: `${verb}: ${d.method} ${d.host}${d.path}`,
        lines: [
          `Agent: ${d.agent.name}`,
          `${verb} by ${decider(d.decidedBy)}`,
          ...(d.rememberedUntil ? [`Later requests of this agent under the same rule pass without a hold until ${d.rememberedUntil}`] : []),
        ],
        links: null,
        priority: 3,
        tags: [d.decision === "approve" ? "white_check_mark" : "x"],
      };
    }
    case "budget.threshold": {
      const d = payload.data as BudgetThresholdData;
      return {
        title: `Budget at ${d.percent}%: ${usd(d.spentCents)} of ${usd(d.limitCents)} (${d.period})`,
        lines: [`Budget ${d.budgetId} (${d.scope})`, d.resetsAt ? `Resets at ${d.resetsAt}` : "It does not reset (total budget)"],
        links: null,
        priority: d.percent >= 100 ? 5 : 4,
        tags: ["money_with_wings"],
      };
    }
    default: {
      const d = payload.data as TestData;
      return { title: "credgate test notification", lines: [d.message], links: null, priority: 3, tags: ["bell"] };
    }
  }
}

function webhookRequest(payload: Payload, deliveryId: string, secret: string, unixSeconds: number): ChannelRequest {
  const body = JSON.stringify(payload);
  return {
    headers: {
      "content-type": "application/json",
      "x-credgate-event": payload.event,
      "x-credgate-delivery": deliveryId,
      "x-credgate-signature": webhookSignature(secret, body, unixSeconds),
    },
    body,
  };
}

/** Slack mrkdwn: `&`, `<` and `>` are the only characters Slack wants escaped (api.slack.com/reference/surfaces/formatting). */
const mrkdwn = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const plain = (text: string, max: number) => ({ type: "plain_text", text: cut(text, max), emoji: false });

function slackRequest(payload: Payload): ChannelRequest {
  const r = readable(payload);
  const blocks: unknown[] = [
    { type: "header", text: plain(r.title, 150) },
    { type: "section", text: { type: "mrkdwn", text: cut(r.lines.map(mrkdwn).join("\n"), 3000) } },
  ];
  if (r.links) {
    blocks.push({
      type: "actions",
      elements: [
        { type: "button", action_id: "approve", style: "primary", text: plain("Approve", 75), url: r.links.approveUrl },
        { type: "button", action_id: "deny", style: "danger", text: plain("Deny", 75), url: r.links.denyUrl },
      ],
    });
  }
  blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: mrkdwn(`credgate · ${payload.event}`) }] });
  return { headers: { "content-type": "application/json" }, body: JSON.stringify({ text: cut(r.title, 3000), blocks }) };
}

/** A header value: control characters dropped; non-ASCII text as an RFC 2047 encoded word (ntfy decodes it). */
function headerText(s: string, max: number): string {
  const clean = cut(s.replace(/[\u0000-\u001f\u007f]/g, " "), max);
  return /^[\x20-\x7e]*$/.test(clean) ? clean : `=?UTF-8?B?${Buffer.from(clean, "utf8").toString("base64")}?=`;
}

/** ntfy turns a message over 4096 bytes into an attachment: keep the body under it. */
const NTFY_BODY_MAX = 4000;

function ntfyRequest(payload: Payload): ChannelRequest {
  const r = readable(payload);
  let body = r.lines.join("\n");
  while (Buffer.byteLength(body) > NTFY_BODY_MAX) body = cut(body, Math.floor(body.length * 0.9));
  const headers: Record<string, string> = {
    "content-type": "text/plain; charset=utf-8",
    title: headerText(r.title, 250),
    priority: String(r.priority),
    tags: r.tags.join(","),
  };
  if (r.links) headers.actions = `view, Approve, ${r.links.approveUrl}; view, Deny, ${r.links.denyUrl}`;
  return { headers, body };
}

/** The request for one attempt of one delivery (a webhook's signature carries the attempt's time). */
export function channelRequest(channel: ChannelTarget, payload: Payload, deliveryId: string, unixSeconds: number): ChannelRequest {
  let req: ChannelRequest;
  switch (channel.kind) {
    case "webhook":
      req = webhookRequest(payload, deliveryId, channel.signingSecret ?? "", unixSeconds);
      break;
    case "slack":
      req = slackRequest(payload);
      break;
    case "ntfy":
      req = ntfyRequest(payload);
      break;
  }
  req.headers["user-agent"] = `credgate/${VERSION}`;
  return req;
}

// The targets of a policy rule in the rule form (docs/policy.md#rules Target): network targets typed one per line,
// and apps (every tool, or chosen tools), connections and secrets picked from what exists, by name. A rule's
// target list is rebuilt from those fields; a connection target naming tools (made through the API) is kept.
import type { FieldSpec } from "../components.ts";
import type { PageCtx } from "../types.ts";
import type { ConnectionRecord } from "./apps.ts";
import type { SecretRecord } from "./secretForm.ts";
import type { AppItem, PermissionDefinition, PolicyRule } from "../api-types.ts";

export type Target = PolicyRule["targets"][number];
type TargetOf<K extends Target["kind"]> = Extract<Target, { kind: K }>;
const ofKind =
  <K extends Target["kind"]>(kind: K) =>
  (t: Target): t is TargetOf<K> =>
    t.kind === kind;

/** An app's tools by category (docs/api.md#records Permission definition). */
export interface TargetChoices {
  scope: "project" | "organization";
  apps: { id: string; name: string }[];
  definitions: PermissionDefinition[];
  connections: ConnectionRecord[];
  secrets: SecretRecord[];
}

/** What a rule of this scope may target: a project rule only the project's own connections and secrets. */
export async function loadTargetChoices(ctx: PageCtx, scope: TargetChoices["scope"]): Promise<TargetChoices> {
  const org = scope === "organization";
  const [apps, definitions, connections, secrets] = await Promise.all([
    ctx.api.get<AppItem[]>("/apps"),
    ctx.api.get<PermissionDefinition[]>("/apps/permission-definitions"),
    ctx.api.get<ConnectionRecord[]>(org ? "/org/connections" : "/connections"),
    ctx.api.get<SecretRecord[]>(org ? "/org/secrets" : "/secrets"),
  ]);
  return { scope, apps, definitions, connections: connections.filter((c) => c.scope === scope), secrets: secrets.filter((s) => s.scope === scope) };
}

const appName = (c: TargetChoices, provider: string) => c.apps.find((a) => a.id === provider)?.name ?? provider;
const toolName = (c: TargetChoices, provider: string, id: string) =>
  c.definitions.find((d) => d.provider === provider)?.groups.flatMap((g) => g.tools).find((t) => t.id === id)?.name ?? id;
const connectionName = (c: TargetChoices, id: string) => {
  const conn = c.connections.find((x) => x.id === id);
  return conn ? `${conn.label ?? appName(c, conn.provider)} (${appName(c, conn.provider)})` : id;
};
const secretName = (c: TargetChoices, id: string) => c.secrets.find((s) => s.id === id)?.name ?? id;

/** A target as a person reads it: names, not ids. */
export function targetText(t: Target, c: TargetChoices): string {
  if (t.kind === "network") return [t.method, `${t.hostPattern}${t.pathPattern ?? ""}`].filter(Boolean).join(" ");
  if (t.kind === "secret") return t.secretId ? `secret ${secretName(c, t.secretId)}` : `every ${t.secretScope} secret`;
  const tools = (provider: string) => (t.tools.length ? `: ${t.tools.map((id) => toolName(c, provider, id)).join(", ")}` : "");
  if (t.kind === "app") return `${appName(c, t.provider)}${tools(t.provider)}`;
  const provider = c.connections.find((x) => x.id === t.connectionId)?.provider ?? "";
  return `connection ${connectionName(c, t.connectionId)}${tools(provider)}`;
}

const networkLine = (t: TargetOf<"network">) => [t.hostPattern, t.pathPattern, t.method].filter(Boolean).join(" ");

/** One network target per line: `host [path] [METHOD]`, e.g. `api.example.com /v1/* POST`. */
function parseNetwork(text: string): Target[] {
  return lines(text).map((line) => {
    const t: TargetOf<"network"> = { kind: "network", hostPattern: "" };
    for (const part of line.split(/\s+/)) {
      if (/^[A-Z]+$/.test(part)) t.method = part;
      else if (part.startsWith("/")) t.pathPattern = part;
      else t.hostPattern = part;
    }
    return t;
  });
}

const lines = (text: string) => text.split("\n").map((l) => l.trim()).filter(Boolean);
const isKept = (t: Target) => t.kind === "connection" && t.tools.length > 0;

export function targetFields(c: TargetChoices, targets: Target[]): FieldSpec[] {
  const apps = targets.filter(ofKind("app"));
  const kept = targets.filter(isKept);
  const secretOptions: [string, string][] = [
    [`scope:${c.scope}`, `Every ${c.scope} secret`],
    ...c.secrets.map((s): [string, string] => [`id:${s.id}`, `${s.name} (${s.hostPattern})`]),
  ];
  return [
    {
      name: "targets",
      label: "Hosts",
      type: "textarea",
      value: targets.filter(ofKind("network")).map(networkLine).join("\n"),
      placeholder: "api.example.com /admin/* DELETE",
      hint: "One per line: host, then optionally a path and a method. * matches any host.",
      match: /target|host|wildcard|pathPattern|method/i,
    },
    {
      name: "apps",
      label: "Apps (every tool)",
      type: "select",
      multiple: true,
      options: c.apps.map((a): [string, string] => [a.id, a.name]),
      values: apps.filter((t) => !t.tools.length).map((t) => t.provider),
      match: /provider/i,
    },
    {
      name: "tools",
      label: "App tools",
      type: "select",
      multiple: true,
      options: c.definitions.flatMap((d) => d.groups.flatMap((g) => g.tools.map((t): [string, string] => [`${d.provider} ${t.id}`, `${appName(c, d.provider)} · ${t.name} (${g.category})`]))),
      values: apps.flatMap((t) => t.tools.map((id) => `${t.provider} ${id}`)),
      hint: "Matches the requests of those tools only (their method, host and path).",
      match: /tool/i,
    },
    {
      name: "connections",
      label: "Connections",
      type: "select",
      multiple: true,
      options: c.connections.map((x): [string, string] => [x.id, connectionName(c, x.id)]),
      values: targets.filter(ofKind("connection")).filter((t) => !isKept(t)).map((t) => t.connectionId),
      hint: kept.length ? `Also kept: ${kept.map((t) => targetText(t, c)).join("; ")}.` : "Requests that use that connection's credential.",
      match: /connection/i,
    },
    {
      name: "secrets",
      label: "Secrets",
      type: "select",
      multiple: true,
      options: secretOptions,
      values: targets.filter(ofKind("secret")).map((t) => (t.secretId ? `id:${t.secretId}` : `scope:${t.secretScope}`)),
      hint: "Requests into which that secret would be injected.",
      match: /secret/i,
    },
  ];
}

/** The rule's targets from the form's values (and the kept ones of `previous`). */
export function targetsFrom(v: Record<string, string | boolean>, previous: Target[]): Target[] {
  const picked = (name: string) => lines(String(v[name] ?? ""));
  const tools = new Map<string, string[]>();
  for (const value of picked("tools")) {
    const [provider, id] = value.split(" ") as [string, string];
    tools.set(provider, [...(tools.get(provider) ?? []), id]);
  }
  return [
    ...parseNetwork(String(v.targets ?? "")),
    ...picked("apps").map((provider): Target => ({ kind: "app", provider, tools: [] })),
    ...[...tools].map(([provider, ids]): Target => ({ kind: "app", provider, tools: ids })),
    ...picked("connections").map((connectionId): Target => ({ kind: "connection", connectionId, tools: [] })),
    ...picked("secrets").map((s): Target => (s.startsWith("id:") ? { kind: "secret", secretId: s.slice(3) } : { kind: "secret", secretScope: s.slice(6) === "organization" ? "organization" : "project" })),
    ...previous.filter(isKept),
  ];
}

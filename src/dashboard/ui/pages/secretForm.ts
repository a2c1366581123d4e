// The secret form shared by create and edit, project and organization: every injection variant of a generic
// secret (header, query parameter, URL path template, URL path regex, placeholder with its surfaces, AWS
// Signature V4, GitHub App, PostgreSQL database, Google service account, Azure client secret, SSH key), the LLM key types, and an external vault reference. It builds the request body
// of POST and PATCH /secrets (docs/injection.md#secrets).
import type { FieldSpec } from "../components.ts";
import type { Secret } from "../api-types.ts";

export type SecretRecord = Secret;

export const TYPES: [string, string][] = [
  ["generic", "Generic secret (header, query, path or placeholder)"],
  ["llm_a", "Anthropic-compatible API key"],
  ["llm_b", "OpenAI-compatible API key"],
];

const INJECTIONS: [string, string][] = [
  ["header", "Header"],
  ["query", "Query parameter"],
  ["pathTemplate", "URL path template"],
  ["pathRegex", "URL path regex"],
  ["placeholder", "Placeholder (replaced wherever the agent writes it)"],
  ["awsSigV4", "AWS Signature V4 (signs every request)"],
  ["githubApp", "GitHub App (mints installation tokens)"],
  ["database", "PostgreSQL database (agents connect through credgate's database port)"],
  ["gcpServiceAccount", "Google Cloud service account (mints access tokens)"],
  ["azureClientSecret", "Azure client secret (mints access tokens)"],
  ["ssh", "SSH key (git over SSH through the gateway)"],
];

/** An SSH secret's choices (docs/ssh.md#the-ssh-secret). */
const SSH_COMMANDS: [string, string][] = [
  ["git", "git only (clone, fetch, push)"],
  ["any", "Any command"],
];
const SSH_PUSH: [string, string][] = [
  ["allow", "Allowed"],
  ["approve", "Held for a person's approval"],
  ["block", "Blocked"],
];

/** A database secret's choices (docs/databases.md#the-database-secret). */
const DB_TLS: [string, string][] = [
  ["verify-full", "verify-full: encrypted, certificate and name checked"],
  ["require", "require: encrypted, not verified"],
  ["off", "off: no TLS (loopback databases only)"],
];
const DB_WRITES: [string, string][] = [
  ["allow", "Allowed"],
  ["approve", "Held for a person's approval"],
  ["block", "Blocked (the session is read-only)"],
];

/** Where a placeholder is replaced (docs/injection.md#placeholders): one checkbox each. */
const SURFACES: [string, string][] = [
  ["header", "Header values"],
  ["query", "Query string"],
  ["path", "URL path"],
  ["body", "Request body"],
  ["websocket", "WebSocket messages"],
];
const surfaceField = (name: string) => `surface_${name}`;

/** An injectionConfig read field by field, whichever variant it is. */
type ConfigFields = Partial<Record<string, string | string[]>> & {
  awsSigV4?: { accessKeyId: string; region?: string; service?: string };
  githubApp?: { appId: number; installationId: number };
  gcpServiceAccount?: { scopes?: string[] };
  azureClientSecret?: { tenantId: string; clientId: string; scope?: string };
  database?: { engine: "postgresql"; port?: number; user: string; databases?: string[]; tls?: string; readOnly?: boolean; writes?: string };
  ssh?: { user?: string; knownHosts: string; commands?: string; push?: string };
};

function injectionKind(c: ConfigFields | null): string {
  if (!c) return "header";
  if ("placeholder" in c) return "placeholder";
  if (c.awsSigV4) return "awsSigV4";
  if (c.githubApp) return "githubApp";
  if (c.database) return "database";
  if (c.ssh) return "ssh";
  if (c.gcpServiceAccount) return "gcpServiceAccount";
  if (c.azureClientSecret) return "azureClientSecret";
  if ("paramName" in c) return "query";
  if ("pathTemplate" in c) return "pathTemplate";
  if ("pathRegex" in c) return "pathRegex";
  return "header";
}

export function describeInjection(s: SecretRecord): string {
  const c = s.injectionConfig;
  if (!c) return s.type === "generic" ? "—" : `LLM key (${String(s.metadata?.authMode ?? "api-key")})`;
  if ("awsSigV4" in c) {
    const { accessKeyId, region, service } = c.awsSigV4;
    return `AWS SigV4, key ${accessKeyId}${region || service ? ` (${[region, service].filter(Boolean).join(", ")})` : ""}`;
  }
  if ("githubApp" in c) return `GitHub App ${c.githubApp.appId}, installation ${c.githubApp.installationId}`;
  if ("database" in c) {
    const d = c.database;
    return [
      `PostgreSQL ${d.user}@${s.hostPattern.includes(":") && !s.hostPattern.startsWith("[") ? `[${s.hostPattern}]` : s.hostPattern}:${d.port ?? 5432}`,
      d.databases ? `databases ${d.databases.join(", ")}` : "any database",
      `TLS ${d.tls ?? "verify-full"}`,
      d.readOnly ? "read-only" : null,
      `writes ${d.writes ?? "allow"}`,
    ]
      .filter(Boolean)
      .join(" · ");
  }
  if ("ssh" in c) {
    const k = c.ssh;
    return [`SSH ${k.user ?? "git"}@${s.hostPattern}`, k.commands === "any" ? "any command" : "git only", `pushes ${k.push ?? "allow"}`].join(" · ");
  }
  if ("gcpServiceAccount" in c) return `Google service account${c.gcpServiceAccount.scopes ? ` (${c.gcpServiceAccount.scopes.join(" ")})` : ""}`;
  if ("azureClientSecret" in c) return `Azure app ${c.azureClientSecret.clientId}, tenant ${c.azureClientSecret.tenantId}${c.azureClientSecret.scope ? ` (${c.azureClientSecret.scope})` : ""}`;
  if ("headerName" in c) return `Header ${c.headerName}: ${c.valueFormat ?? "{value}"}`;
  if ("paramName" in c) return `Query ${c.paramName}=${c.paramFormat ?? "{value}"}`;
  if ("pathTemplate" in c) return `Path ${c.pathTemplate}`;
  if ("placeholder" in c) return `Placeholder ${c.placeholder} (${(c.surfaces ?? SURFACES.map(([n]) => n)).join(", ")})`;
  return `Path ${c.pathRegex} → ${c.pathReplacement}`;
}

type Values = Record<string, string | boolean>;
const isGeneric = (v: Values) => v.type === "generic";
/** The value is kept outside credgate: 1Password (`external_vault`) or a secret store (`vault`, docs/injection.md#secret-stores). */
const isVault = (v: Values) => v.valueSource === "external_vault" || v.valueSource === "vault";
const isOnePassword = (v: Values) => v.valueSource === "external_vault";
const isStore = (v: Values) => v.valueSource === "vault";
const isKind = (v: Values, kind: string) => isGeneric(v) && v.injection === kind;
/** The variants whose value is a key with a field of its own (the secret access key, the PEM). */
const isKeyed = (v: Values) => isKind(v, "awsSigV4") || isKind(v, "githubApp") || isKind(v, "gcpServiceAccount") || isKind(v, "azureClientSecret");
const isDatabase = (v: Values) => isKind(v, "database");
const isSsh = (v: Values) => isKind(v, "ssh");
/** Variants that are no HTTP credential: no path pattern, a value field of their own. */
const notHttp = (v: Values) => isDatabase(v) || isSsh(v);

/**
 * `allowVault`: 1Password Connect may hold the value (project secrets only); `allowStore`: a secret store may
 * (project and organization secrets).
 */
export function secretFields(opts: { existing?: SecretRecord; prefill?: { type?: string; host?: string }; allowVault: boolean; allowStore?: boolean }): FieldSpec[] {
  const s = opts.existing;
  const type = s?.type ?? (TYPES.some(([t]) => t === opts.prefill?.type) ? opts.prefill!.type! : "generic");
  // Read field by field: whichever variant it is, the form shows its fields.
  const c = (s?.injectionConfig ?? null) as ConfigFields | null;
  const text = (name: string) => {
    const v = c?.[name];
    return typeof v === "string" ? v : "";
  };
  const surfaces = Array.isArray(c?.surfaces) ? c.surfaces : SURFACES.map(([n]) => n);
  const kind = injectionKind(c);
  const fields: FieldSpec[] = [
    { name: "name", label: "Name", required: true, value: s?.name ?? "", match: /^name /i },
    s
      ? { name: "type", label: "Type", type: "select", value: type, options: TYPES.filter(([t]) => t === type) }
      : { name: "type", label: "Type", type: "select", value: type, options: TYPES, match: /^type /i },
  ];
  if (opts.allowVault || opts.allowStore) {
    const options: [string, string][] = [["inline", "Stored in credgate (encrypted)"]];
    if (opts.allowVault) options.push(["external_vault", "External vault (1Password Connect)"]);
    if (opts.allowStore) options.push(["vault", "Secret store (Vault, AWS, Google, Azure, command)"]);
    fields.push({ name: "valueSource", label: "Value source", type: "select", value: s?.valueSource ?? "inline", options, match: /vault is (only|not)|valueSource/i });
  }
  fields.push(
    {
      name: "value",
      label: "Value",
      type: "password",
      required: !s,
      hint: s ? "Leave empty to keep the stored value. Values are never shown again." : "Stored encrypted; it is never shown again.",
      when: (v) => !isVault(v) && !isKeyed(v) && !notHttp(v),
      match: /^value |secret value/i,
    },
    { name: "opRef", label: "Vault reference", placeholder: "op://vault/item/field", value: s?.opRef ?? "", required: true, when: isOnePassword, match: /opRef|External vault/i },
    {
      name: "storeRef",
      label: "Store reference",
      placeholder: "vault://secret/app#token",
      value: s?.storeRef ?? "",
      required: true,
      hint: "vault://<mount>/<path>#<field>, vault-db://<mount>/<role>, aws-sm://<region>/<name>[#<field>], gcp-sm://projects/<p>/secrets/<s>, azure-kv://<vault>/<secret> or cmd://<name>. Read when a request needs it, never stored.",
      when: isStore,
      match: /storeRef|is not configured|Secret command/i,
    },
    {
      name: "authMode",
      label: "Key kind",
      type: "select",
      value: String(s?.metadata?.authMode ?? ""),
      options: [
        ["", "Detect from the value"],
        ["api-key", "API key"],
        ["oauth", "OAuth token"],
      ],
      when: (v) => !isGeneric(v),
    },
    {
      name: "hostPattern",
      label: "Host",
      value: s?.hostPattern ?? opts.prefill?.host ?? "",
      placeholder: "api.example.com or *.example.com",
      hint: "Hostname only. LLM keys default to the vendor's API host when empty.",
      match: /host|hostname|wildcard|public suffix/i,
    },
    { name: "pathPattern", label: "Path", value: s?.pathPattern ?? "", placeholder: "/v1/*", hint: "Optional: only requests whose path matches get the secret.", when: (v) => !notHttp(v), match: /pathPattern/i },
    { name: "injection", label: "Inject as", type: "select", value: kind, options: INJECTIONS, when: isGeneric, match: /injectionConfig must be|Header name, parameter name/i },
    { name: "headerName", label: "Header", value: text("headerName"), placeholder: "authorization", required: true, when: (v) => isGeneric(v) && v.injection === "header", match: /headerName/i },
    { name: "valueFormat", label: "Value format", value: text("valueFormat"), placeholder: "Bearer {value}", hint: "Where the secret goes; {value} alone when empty.", when: (v) => isGeneric(v) && v.injection === "header", match: /valueFormat/i },
    { name: "paramName", label: "Parameter", value: text("paramName"), placeholder: "api_key", required: true, when: (v) => isGeneric(v) && v.injection === "query", match: /paramName/i },
    { name: "paramFormat", label: "Parameter format", value: text("paramFormat"), placeholder: "{value}", when: (v) => isGeneric(v) && v.injection === "query", match: /paramFormat/i },
    { name: "pathTemplate", label: "Path template", value: text("pathTemplate"), placeholder: "/bot{value}", required: true, when: (v) => isGeneric(v) && v.injection === "pathTemplate", match: /path template/i },
    { name: "pathRegex", label: "Path regex", value: text("pathRegex"), placeholder: "^/proj/[^/]+/", required: true, when: (v) => isGeneric(v) && v.injection === "pathRegex", match: /regular expression|pathRegex/i },
    { name: "pathReplacement", label: "Replacement", value: text("pathReplacement"), placeholder: "/proj/{value}/", required: true, when: (v) => isGeneric(v) && v.injection === "pathRegex", match: /replacement/i },
    {
      name: "placeholder",
      label: "Placeholder",
      value: text("placeholder"),
      placeholder: "CREDGATE_STRIPE_KEY",
      hint: "What the agent writes instead of the secret (8-128 characters of A-Z a-z 0-9 . _ ~ -); it is replaced in the places ticked below.",
      required: true,
      when: (v) => isGeneric(v) && v.injection === "placeholder",
      match: /placeholder/i,
    },
    ...SURFACES.map(
      ([name, label], i): FieldSpec => ({
        name: surfaceField(name),
        label,
        type: "checkbox",
        value: surfaces.includes(name),
        // The message about the list goes under the first box.
        ...(i === 0 ? { match: /surfaces/i } : {}),
        when: (v) => isGeneric(v) && v.injection === "placeholder",
      }),
    ),
    { name: "accessKeyId", label: "Access key ID", value: c?.awsSigV4?.accessKeyId ?? "", placeholder: "AKIA…", required: true, when: (v) => isKind(v, "awsSigV4"), match: /accessKeyId/i },
    {
      name: "secretAccessKey",
      label: "Secret access key",
      type: "password",
      required: !s,
      hint: "Agents keep placeholder credentials (AWS_ACCESS_KEY_ID=credgate-managed); credgate signs every request with this key. Never shown again.",
      when: (v) => isKind(v, "awsSigV4") && !isVault(v),
      match: /^value /i,
    },
    { name: "region", label: "Region", value: c?.awsSigV4?.region ?? "", placeholder: "from the request", hint: "Optional: overrides the region the request implies.", when: (v) => isKind(v, "awsSigV4"), match: /region/i },
    { name: "service", label: "Service", value: c?.awsSigV4?.service ?? "", placeholder: "from the request", hint: "Optional: the signing name, e.g. s3 or bedrock.", when: (v) => isKind(v, "awsSigV4"), match: /service/i },
    { name: "appId", label: "App ID", value: c?.githubApp ? String(c.githubApp.appId) : "", placeholder: "123456", required: true, when: (v) => isKind(v, "githubApp"), match: /appId/i },
    { name: "installationId", label: "Installation ID", value: c?.githubApp ? String(c.githubApp.installationId) : "", placeholder: "12345678", required: true, when: (v) => isKind(v, "githubApp"), match: /installationId/i },
    {
      name: "privateKey",
      label: "Private key (PEM)",
      type: "textarea",
      required: !s,
      placeholder: "-----BEGIN RSA PRIVATE KEY-----",
      hint: s ? "Leave empty to keep the stored key. Never shown again." : "The app's private key; credgate mints short-lived installation tokens with it. Never shown again.",
      when: (v) => isKind(v, "githubApp") && !isVault(v),
      match: /PEM private key|^value /i,
    },
    {
      name: "gcpKey",
      label: "Service-account key (JSON)",
      type: "textarea",
      required: !s,
      placeholder: '{"type": "service_account", …}',
      hint: s ? "Leave empty to keep the stored key. Never shown again." : "The JSON key file; credgate mints access tokens with it and agents get a stub. Never shown again. Host defaults to *.googleapis.com.",
      when: (v) => isKind(v, "gcpServiceAccount") && !isVault(v),
      match: /service-account JSON key|^value /i,
    },
    {
      name: "gcpScopes",
      label: "Scopes",
      value: c?.gcpServiceAccount?.scopes?.join(" ") ?? "",
      placeholder: "https://www.googleapis.com/auth/cloud-platform",
      hint: "Optional, separated by spaces.",
      when: (v) => isKind(v, "gcpServiceAccount"),
      match: /scopes/i,
    },
    { name: "tenantId", label: "Tenant ID", value: c?.azureClientSecret?.tenantId ?? "", placeholder: "00000000-0000-0000-0000-000000000000", required: true, when: (v) => isKind(v, "azureClientSecret"), match: /tenantId/i },
    { name: "clientId", label: "Client ID", value: c?.azureClientSecret?.clientId ?? "", placeholder: "00000000-0000-0000-0000-000000000000", required: true, when: (v) => isKind(v, "azureClientSecret"), match: /clientId/i },
    {
      name: "clientSecret",
      label: "Client secret",
      type: "password",
      required: !s,
      hint: "Agents get AZURE_CLIENT_SECRET=credgate-managed; credgate mints tokens with this secret. Never shown again.",
      when: (v) => isKind(v, "azureClientSecret") && !isVault(v),
      match: /^value /i,
    },
    {
      name: "azureScope",
      label: "Scope",
      value: c?.azureClientSecret?.scope ?? "",
      placeholder: "from the request's host",
      hint: "Optional, e.g. https://management.azure.com/.default.",
      when: (v) => isKind(v, "azureClientSecret"),
      match: /azureClientSecret.scope/i,
    },
    ...databaseFields(c?.database, !s),
    ...sshFields(c?.ssh, !s),
  );
  return fields;
}

/** The database variant's fields (docs/databases.md#the-database-secret); the Host field above is the server's. */
function databaseFields(d: ConfigFields["database"], creating: boolean): FieldSpec[] {
  const when = isDatabase;
  return [
    {
      name: "dbPassword",
      label: "Password",
      type: "password",
      required: creating,
      hint: creating ? "The database user's password. Agents connect with their own token instead; it is never shown again." : "Leave empty to keep the stored password. Never shown again.",
      when: (v) => isDatabase(v) && !isVault(v),
      match: /^value /i,
    },
    { name: "dbUser", label: "Database user", value: d?.user ?? "", placeholder: "app", required: true, when, match: /database\.user/i },
    { name: "dbPort", label: "Port", value: d ? String(d.port ?? 5432) : "", placeholder: "5432", when, match: /database\.port/i },
    {
      name: "dbDatabases",
      label: "Databases",
      value: d?.databases?.join(", ") ?? "",
      placeholder: "any",
      hint: "Optional: the database names agents may connect to, separated by commas; any when empty.",
      when,
      match: /database\.databases/i,
    },
    { name: "dbTls", label: "TLS to the server", type: "select", value: d?.tls ?? "verify-full", options: DB_TLS, when, match: /database\.tls|tls off/i },
    { name: "dbReadOnly", label: "Read-only (the server refuses every write)", type: "checkbox", value: d?.readOnly ?? false, when, match: /database\.readOnly/i },
    { name: "dbWrites", label: "Writes", type: "select", value: d?.writes ?? "allow", options: DB_WRITES, when, match: /database\.writes/i },
  ];
}

/** The SSH variant's fields (docs/ssh.md#the-ssh-secret); the Host field above is the SSH server's. */
function sshFields(k: ConfigFields["ssh"], creating: boolean): FieldSpec[] {
  const when = isSsh;
  return [
    {
      name: "sshKey",
      label: "Private key (OpenSSH)",
      type: "textarea",
      required: creating,
      placeholder: "-----BEGIN OPENSSH PRIVATE KEY-----",
      hint: creating
        ? "An unencrypted ed25519, ECDSA or RSA key; agents never see it. To have credgate make one, use POST /v1/secrets/generate-ssh-key. Never shown again."
        : "Leave empty to keep the stored key. Its public half: GET /v1/secrets/<id>/public-key. Never shown again.",
      when: (v) => isSsh(v) && !isVault(v),
      match: /OpenSSH private key|^value /i,
    },
    { name: "sshUser", label: "SSH user", value: k?.user ?? "", placeholder: "git", when, match: /ssh\.user/i },
    {
      name: "sshKnownHosts",
      label: "Server host keys (known_hosts lines)",
      type: "textarea",
      value: k?.knownHosts ?? "",
      placeholder: "github.com ssh-ed25519 AAAAC3…",
      required: true,
      hint: "The server's keys as ssh-keyscan prints them; credgate refuses any other key.",
      when,
      match: /knownHosts/i,
    },
    { name: "sshCommands", label: "Commands", type: "select", value: k?.commands ?? "git", options: SSH_COMMANDS, when, match: /ssh\.commands/i },
    { name: "sshPush", label: "Pushes", type: "select", value: k?.push ?? "allow", options: SSH_PUSH, when, match: /ssh\.push/i },
  ];
}

const str = (v: string | boolean | undefined) => (typeof v === "string" ? v.trim() : "");

/** A database config from the form: a port of digits becomes a number (anything else is sent as typed, for the API's message). */
function databaseConfig(v: Values): Record<string, unknown> {
  const port = str(v.dbPort);
  const databases = str(v.dbDatabases)
    .split(",")
    .map((d) => d.trim())
    .filter(Boolean);
  return {
    database: {
      engine: "postgresql",
      user: str(v.dbUser),
      ...(port ? { port: /^\d+$/.test(port) ? Number(port) : port } : {}),
      ...(databases.length > 0 ? { databases } : {}),
      tls: str(v.dbTls) || "verify-full",
      readOnly: v.dbReadOnly === true,
      writes: str(v.dbWrites) || "allow",
    },
  };
}

function injectionConfig(v: Values): Record<string, unknown> {
  switch (v.injection) {
    case "awsSigV4":
      return { awsSigV4: { accessKeyId: str(v.accessKeyId), ...(str(v.region) ? { region: str(v.region) } : {}), ...(str(v.service) ? { service: str(v.service) } : {}) } };
    case "githubApp":
      return { githubApp: { appId: str(v.appId), installationId: str(v.installationId) } };
    case "gcpServiceAccount": {
      const scopes = str(v.gcpScopes).split(/\s+/).filter(Boolean);
      return { gcpServiceAccount: scopes.length > 0 ? { scopes } : {} };
    }
    case "azureClientSecret":
      return { azureClientSecret: { tenantId: str(v.tenantId), clientId: str(v.clientId), ...(str(v.azureScope) ? { scope: str(v.azureScope) } : {}) } };
    case "database":
      return databaseConfig(v);
    case "ssh":
      return { ssh: { ...(str(v.sshUser) ? { user: str(v.sshUser) } : {}), knownHosts: str(v.sshKnownHosts), commands: str(v.sshCommands) || "git", push: str(v.sshPush) || "allow" } };
    case "query":
      return { paramName: str(v.paramName), ...(str(v.paramFormat) ? { paramFormat: str(v.paramFormat) } : {}) };
    case "pathTemplate":
      return { pathTemplate: str(v.pathTemplate) };
    case "pathRegex":
      return { pathRegex: str(v.pathRegex), pathReplacement: str(v.pathReplacement) };
    case "placeholder":
      return { placeholder: str(v.placeholder), surfaces: SURFACES.map(([n]) => n).filter((n) => v[surfaceField(n)] === true) };
    default:
      return { headerName: str(v.headerName), ...(str(v.valueFormat) ? { valueFormat: str(v.valueFormat) } : {}) };
  }
}

/** The POST body (create) or PATCH body (edit) from the form's visible values. */
export function secretBody(v: Values, editing: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { name: str(v.name) };
  if (!editing) body.type = v.type;
  const vault = v.valueSource === "external_vault";
  const store = v.valueSource === "vault";
  if (v.valueSource !== undefined && (!editing || vault || store)) body.valueSource = vault ? "external_vault" : store ? "vault" : "inline";
  if (vault) body.opRef = str(v.opRef);
  else if (store) body.storeRef = str(v.storeRef);
  else {
    const keyField: Record<string, string> = { awsSigV4: "secretAccessKey", githubApp: "privateKey", gcpServiceAccount: "gcpKey", azureClientSecret: "clientSecret", database: "dbPassword", ssh: "sshKey" };
    const value = isGeneric(v) && typeof v.injection === "string" && keyField[v.injection] ? v[keyField[v.injection]!] : v.value;
    if (typeof value === "string" && value !== "") body.value = value;
  }
  if (v.type !== "generic" && str(v.authMode)) body.metadata = { authMode: str(v.authMode) };
  // A Google service account's host defaults to *.googleapis.com when left empty.
  if (str(v.hostPattern) || (v.type === "generic" && !isKind(v, "gcpServiceAccount"))) body.hostPattern = str(v.hostPattern);
  if (notHttp(v)) {
    // No path for a database or an SSH key; an edit clears one a former HTTP variant had.
    if (editing) body.pathPattern = null;
  } else if (editing) body.pathPattern = str(v.pathPattern) || null;
  else if (str(v.pathPattern)) body.pathPattern = str(v.pathPattern);
  if (v.type === "generic") body.injectionConfig = injectionConfig(v);
  return body;
}

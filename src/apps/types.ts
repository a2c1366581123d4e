// The shape of one catalog entry (docs/injection.md#app-connections): everything credgate knows about a third-party app is data
// here — how to connect it, which hosts it serves, how the gateway injects its token, which hosts a user
// may block with one click, and which tools (method + host + path) its permission definition names.

/** How a credential goes onto a request. `field` names an API-key field; OAuth apps inject the access token. */
export type AppInjection =
  /** `Authorization: Bearer <value>` */
  | { kind: "bearer"; field?: string }
  /** `Authorization: Basic base64("<username>:<value>")` (git over HTTPS) */
  | { kind: "basic"; username: string; field?: string }
  /** `<name>: <format with {value}>` */
  | { kind: "header"; name: string; format?: string; field?: string }
  /** `?<param>=<value>` (first same-named parameter replaced, else appended) */
  | { kind: "query"; param: string; field?: string };

/** One host the app serves. Paths are path patterns (docs/injection.md#host-and-path-patterns); absent means every path of the host. */
export interface AppHostRule {
  host: string;
  paths?: string[];
  inject: AppInjection[];
}

export interface AppTool {
  /** snake_case, unique within the app. */
  id: string;
  name: string;
  description: string;
  category: "read" | "write";
  /** Uppercase HTTP method. */
  method: string;
  /** Host pattern (docs/injection.md#host-and-path-patterns). */
  host: string;
  /** Path pattern (docs/injection.md#host-and-path-patterns). */
  path: string;
}

/** A credential field the user types in: an API-key field, or a BYOC OAuth client field. */
export interface AppField {
  name: string;
  label: string;
  /** Secret fields are sealed at rest and never returned; non-secret ones show in `settings`. */
  secret: boolean;
}

export interface AppOAuth {
  authorizeUrl: string;
  tokenUrl: string;
  scopes: string[];
  /** How scopes join in the authorize URL (most providers use a space; a few a comma). */
  scopeSeparator?: string;
  pkce: boolean;
  /** Extra authorize query parameters, e.g. Google's `access_type=offline`. */
  authorizeParams?: Record<string, string>;
  /**
   * How the token request authenticates the client: `body` (default) sends `client_id`/`client_secret` as
   * form fields; `basic` sends `Authorization: Basic base64(id:secret)` (Notion requires it).
   */
  tokenAuth?: "body" | "basic";
  /**
   * Where the connection's label comes from after the token exchange (account email, username or name).
   * `method` defaults to GET; a POST sends `body` as JSON when set (Linear's GraphQL), else no body (Dropbox).
   */
  account?: { url: string; method?: "GET" | "POST"; body?: unknown; label: (body: any) => unknown };
  /** Where the label comes from when the token response itself names the account (e.g. Slack's team). */
  labelFromToken?: (body: any) => unknown;
}

/** A host the user may block with one click (inactive until activated). */
export interface AppBlocklistHost {
  id: string;
  name: string;
  hostPattern: string;
}

export interface AppDefinition {
  id: string;
  name: string;
  description: string;
  connectionType: "oauth" | "api_key";
  /** OAuth apps: BYOC client fields (`clientId`, `clientSecret`). API-key apps: the fields the user pastes. */
  fields: AppField[];
  oauth?: AppOAuth;
  hosts: AppHostRule[];
  blocklist: AppBlocklistHost[];
  tools: AppTool[];
  /** The granular resource scope a grant may set (docs/injection.md#resource-limits resources guard). */
  resources?: "repositories" | "folders";
}

/** The BYOC client fields every OAuth app shares. */
export const OAUTH_CLIENT_FIELDS: AppField[] = [
  { name: "clientId", label: "Client ID", secret: false },
  { name: "clientSecret", label: "Client Secret", secret: true },
];

/** Shorthand for a tool entry. */
export function tool(category: AppTool["category"], id: string, method: string, host: string, path: string, name: string, description: string): AppTool {
  return { id, name, description, category, method, host, path };
}

// The app catalog (docs/injection.md#app-connections): invariants every entry must hold, the contract's examples, and concrete
// requests mapped to tools and host rules with the real docs/injection.md#host-and-path-patterns matchers.
import { describe, expect, test } from "bun:test";
import { APPS, findApp } from "../../src/apps/index.ts";
import { OAUTH_CLIENT_FIELDS, type AppDefinition, type AppInjection, type AppTool } from "../../src/apps/types.ts";
import { compileHostPattern, compilePathPattern, hostPatternError, normalizeHost, pathPatternError, pathWithoutQuery } from "../../src/core/patterns.ts";

const ORDER = ["github", "gitlab", "gmail", "google-calendar", "google-drive", "slack", "notion", "linear", "jira", "dropbox", "resend", "cloudflare", "vercel", "datadog"];
const SNAKE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;
const SHORT_ID = /^[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*$/;
const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);
/** Apps whose permission definition is deliberately smaller than 6 tools (Linear: one GraphQL endpoint). */
const FEW_TOOLS = new Set(["linear"]);
/** OAuth apps without scopes (Notion: capabilities live on the integration, not in the authorize URL). */
const NO_SCOPES = new Set(["notion"]);

function app(id: string): AppDefinition {
  const a = findApp(id);
  if (!a) throw new Error(`missing app ${id}`);
  return a;
}

/** A concrete path a path pattern matches: every `*` becomes `x` (a segment, a glob's middle or a raw tail). */
function sample(pattern: string): string {
  return pattern.replace(/\*/g, "x");
}

function toolMatches(t: AppTool, method: string, host: string, pathAndQuery: string): boolean {
  return (
    t.method.toUpperCase() === method.toUpperCase() &&
    compileHostPattern(t.host)(normalizeHost(host)) &&
    compilePathPattern(t.path)(pathWithoutQuery(pathAndQuery))
  );
}

/** The ids of an app's tools a request matches. */
function toolsFor(id: string, method: string, host: string, path: string): string[] {
  return app(id).tools.filter((t) => toolMatches(t, method, host, path)).map((t) => t.id).sort();
}

/** Indexes of the app's host rules serving host + path (what docs/injection.md#app-connections checks). */
function rulesFor(a: AppDefinition, host: string, path: string): number[] {
  const p = pathWithoutQuery(path);
  return a.hosts.flatMap((r, i) =>
    compileHostPattern(r.host)(normalizeHost(host)) && (!r.paths || r.paths.some((pp) => compilePathPattern(pp)(p))) ? [i] : [],
  );
}

/** Every app serving host + path: more than one is a 409 `multiple_providers` at the gateway. */
function appsServing(host: string, path: string): string[] {
  return APPS.filter((a) => rulesFor(a, host, path).length > 0).map((a) => a.id);
}

describe("catalog", () => {
  test("every contract provider, unique ids, in display order", async () => {
    expect(APPS.map((a) => a.id)).toEqual(ORDER);
    expect(new Set(APPS.map((a) => a.id)).size).toBe(APPS.length);
    for (const id of ORDER) expect(findApp(id)?.id).toBe(id);
    expect(findApp("nope")).toBeNull();
  });

  test("resources guards: github repositories, dropbox folders, nobody else", async () => {
    expect(APPS.filter((a) => a.resources).map((a) => [a.id, a.resources])).toEqual([
      ["github", "repositories"],
      ["dropbox", "folders"],
    ]);
  });
});

describe.each(APPS.map((a) => [a.id, a] as const))("%s", (_id, a) => {
  test("name, description and connection type", async () => {
    expect(a.name.trim()).not.toBe("");
    expect(a.description.trim()).not.toBe("");
    expect(["oauth", "api_key"]).toContain(a.connectionType);
  });

  test("host rules: valid host and path patterns, at least one injection", async () => {
    expect(a.hosts.length).toBeGreaterThan(0);
    for (const r of a.hosts) {
      expect(hostPatternError(r.host)).toBeNull();
      expect(r.inject.length).toBeGreaterThan(0);
      if (r.paths) {
        expect(r.paths.length).toBeGreaterThan(0);
        for (const p of r.paths) {
          expect(pathPatternError(p)).toBeNull();
          expect(p.startsWith("/")).toBe(true);
          expect(p).not.toContain("**");
        }
      }
    }
  });

  test("tools: snake_case unique ids, read/write, uppercase methods, valid patterns", async () => {
    if (FEW_TOOLS.has(a.id)) expect(a.tools.length).toBeGreaterThanOrEqual(1);
    else {
      expect(a.tools.length).toBeGreaterThanOrEqual(6);
      expect(a.tools.length).toBeLessThanOrEqual(15);
    }
    expect(new Set(a.tools.map((t) => t.id)).size).toBe(a.tools.length);
    for (const t of a.tools) {
      expect(t.id).toMatch(SNAKE);
      expect(t.name.trim()).not.toBe("");
      expect(t.description.trim()).not.toBe("");
      expect(["read", "write"]).toContain(t.category);
      expect(METHODS.has(t.method)).toBe(true);
      expect(hostPatternError(t.host)).toBeNull();
      expect(pathPatternError(t.path)).toBeNull();
      expect(t.path.startsWith("/")).toBe(true);
      expect(t.path).not.toContain("**");
    }
    // (method, host, path) triples are unique: two tools with the same target would be indistinguishable.
    expect(new Set(a.tools.map((t) => `${t.method} ${t.host} ${t.path}`)).size).toBe(a.tools.length);
  });

  test("every tool is served by one of the app's host rules, and by no other app", async () => {
    for (const t of a.tools) {
      const path = sample(t.path);
      expect(compilePathPattern(t.path)(path)).toBe(true);
      expect({ tool: t.id, rules: rulesFor(a, t.host, path).length > 0 }).toEqual({ tool: t.id, rules: true });
      expect({ tool: t.id, apps: appsServing(t.host, path) }).toEqual({ tool: t.id, apps: [a.id] });
    }
  });

  test("no read tool covers a write tool's request (same method)", async () => {
    const reads = a.tools.filter((t) => t.category === "read");
    for (const w of a.tools.filter((t) => t.category === "write")) {
      const covering = reads.filter((r) => toolMatches(r, w.method, w.host, sample(w.path))).map((r) => r.id);
      expect({ write: w.id, covering }).toEqual({ write: w.id, covering: [] });
    }
  });

  test("blocklist: unique short ids, valid host patterns", async () => {
    expect(new Set(a.blocklist.map((b) => b.id)).size).toBe(a.blocklist.length);
    for (const b of a.blocklist) {
      expect(b.id).toMatch(SHORT_ID);
      expect(b.name.trim()).not.toBe("");
      expect(hostPatternError(b.hostPattern)).toBeNull();
    }
  });

  if (a.connectionType === "oauth") {
    test("oauth: https endpoints, scopes, BYOC client fields, a label source, no injection fields", async () => {
      const o = a.oauth!;
      expect(o).toBeDefined();
      expect(new URL(o.authorizeUrl).protocol).toBe("https:");
      expect(new URL(o.tokenUrl).protocol).toBe("https:");
      if (NO_SCOPES.has(a.id)) expect(o.scopes).toEqual([]);
      else expect(o.scopes.length).toBeGreaterThan(0);
      for (const s of o.scopes) expect(s).toMatch(/^\S+$/);
      expect(typeof o.pkce).toBe("boolean");
      expect(a.fields).toEqual(OAUTH_CLIENT_FIELDS);
      expect(a.fields.map((f) => f.name)).toEqual(["clientId", "clientSecret"]);
      expect(Boolean(o.account) || Boolean(o.labelFromToken)).toBe(true);
      if (o.account) expect(new URL(o.account.url).protocol).toBe("https:");
      for (const r of a.hosts) for (const i of r.inject) expect(i.field).toBeUndefined();
    });
  } else {
    test("api key: no oauth, a secret field, every injection names a field", async () => {
      expect(a.oauth).toBeUndefined();
      expect(a.fields.some((f) => f.secret)).toBe(true);
      expect(new Set(a.fields.map((f) => f.name)).size).toBe(a.fields.length);
      const names = new Set(a.fields.map((f) => f.name));
      for (const r of a.hosts) for (const i of r.inject) expect(names.has(i.field ?? "")).toBe(true);
    });
  }
});

describe("contract facts", () => {
  const get = (id: string, tool: string) => {
    const t = app(id).tools.find((x) => x.id === tool);
    if (!t) throw new Error(`missing tool ${id}.${tool}`);
    return { category: t.category, method: t.method, host: t.host, path: t.path };
  };

  test("resend and github examples (docs/injection.md#app-connections)", async () => {
    expect(get("resend", "get_email")).toEqual({ category: "read", method: "GET", host: "api.resend.com", path: "/emails/*" });
    expect(get("resend", "list_emails")).toEqual({ category: "read", method: "GET", host: "api.resend.com", path: "/emails" });
    expect(get("resend", "send_email")).toEqual({ category: "write", method: "POST", host: "api.resend.com", path: "/emails" });
    expect(get("resend", "create_batch")).toEqual({ category: "write", method: "POST", host: "api.resend.com", path: "/emails/batch" });
    expect(get("github", "create_issue")).toEqual({ category: "write", method: "POST", host: "api.github.com", path: "/repos/*/*/issues" });
  });

  test("API-key fields and labels", async () => {
    const fields = (id: string) => app(id).fields.map((f) => [f.name, f.label, f.secret]);
    expect(fields("resend")).toEqual([["apiKey", "API Key", true]]);
    expect(fields("cloudflare")).toEqual([["apiToken", "API Token", true]]);
    expect(fields("vercel")).toEqual([["apiToken", "API Token", true]]);
    expect(fields("datadog")).toEqual([
      ["apiKey", "API Key", true],
      ["appKey", "Application Key", true],
    ]);
  });

  test("hosts and injection of the contract table", async () => {
    const hosts = (id: string): [string, string[] | null, AppInjection[]][] => app(id).hosts.map((r) => [r.host, r.paths ?? null, r.inject]);
    const bearer: AppInjection[] = [{ kind: "bearer" }];
    expect(hosts("gmail")).toEqual([
      ["gmail.googleapis.com", null, bearer],
      ["www.googleapis.com", ["/gmail/*"], bearer],
    ]);
    expect(hosts("google-calendar")).toEqual([["www.googleapis.com", ["/calendar/*"], bearer]]);
    expect(hosts("google-drive")).toEqual([["www.googleapis.com", ["/drive/*", "/upload/drive/*"], bearer]]);
    expect(hosts("slack")).toEqual([["slack.com", ["/api/*"], bearer]]);
    expect(hosts("notion")).toEqual([["api.notion.com", null, bearer]]);
    expect(hosts("linear")).toEqual([["api.linear.app", null, bearer]]);
    expect(hosts("jira")).toEqual([["api.atlassian.com", null, bearer]]);
    expect(hosts("dropbox")).toEqual([
      ["api.dropboxapi.com", null, bearer],
      ["content.dropboxapi.com", null, bearer],
    ]);
    const token: AppInjection[] = [{ kind: "bearer", field: "apiToken" }];
    expect(hosts("cloudflare")).toEqual([["api.cloudflare.com", null, token]]);
    expect(hosts("vercel")).toEqual([["api.vercel.com", null, token]]);
    const gl = app("gitlab").hosts;
    expect(gl.every((r) => r.host === "gitlab.com")).toBe(true);
    expect(gl.find((r) => r.paths?.includes("/api/*"))?.inject).toEqual(bearer);
    const dd = app("datadog").hosts.find((r) => r.host === "api.datadoghq.com");
    expect(dd?.inject).toEqual([
      { kind: "header", name: "DD-API-KEY", field: "apiKey" },
      { kind: "header", name: "DD-APPLICATION-KEY", field: "appKey" },
    ]);
  });

  test("authorize parameters and label sources", async () => {
    const o = (id: string) => app(id).oauth!;
    for (const id of ["gmail", "google-calendar", "google-drive"]) {
      expect(o(id).authorizeParams).toEqual({ access_type: "offline", prompt: "consent" });
      expect(o(id).account!.label({ email: "a@b.c", sub: "1" })).toBe("a@b.c");
    }
    expect(o("notion").authorizeParams).toEqual({ owner: "user" });
    expect(o("notion").tokenAuth).toBe("basic");
    expect(o("notion").labelFromToken!({ workspace_name: "Ada's Notion" })).toBe("Ada's Notion");
    expect(o("jira").authorizeParams).toEqual({ audience: "api.atlassian.com", prompt: "consent" });
    expect(o("jira").scopes).toContain("offline_access");
    expect(o("dropbox").authorizeParams).toEqual({ token_access_type: "offline" });
    expect(o("dropbox").account!.method).toBe("POST");
    expect(o("dropbox").account!.label({ email: "d@x.io", name: { display_name: "D" } })).toBe("d@x.io");
    expect(o("slack").scopeSeparator).toBe(",");
    expect(o("slack").labelFromToken!({ ok: true, team: { id: "T1", name: "Acme" } })).toBe("Acme");
    expect(o("linear").scopeSeparator).toBe(",");
    expect(o("linear").account!.label({ data: { viewer: { email: "l@x.io", name: "L" } } })).toBe("l@x.io");
    expect(o("gitlab").account!.label({ username: "octo", email: "o@x.io" })).toBe("octo");
  });
});

describe("concrete requests → tools (real matchers)", () => {
  test.each<[string, string, string, string, string[]]>([
    ["resend", "GET", "api.resend.com", "/emails/abc", ["get_email"]],
    ["resend", "GET", "API.Resend.com:443", "/emails?limit=5", ["get_email", "list_emails"]],
    ["resend", "POST", "api.resend.com", "/emails", ["send_email"]],
    ["resend", "POST", "api.resend.com", "/emails/batch", ["create_batch"]],
    ["resend", "POST", "api.resend.com", "/emails/e1/cancel", ["cancel_email"]],
    ["github", "POST", "api.github.com", "/repos/a/b/issues", ["create_issue"]],
    ["github", "POST", "api.github.com", "/repos/a/b/c/issues", []],
    ["gitlab", "POST", "gitlab.com", "/api/v4/projects/grp%2Fproj/issues/5/notes", ["create_issue_note"]],
    ["gitlab", "PUT", "gitlab.com", "/api/v4/projects/7/merge_requests/3/merge", ["accept_merge_request"]],
    ["gitlab", "GET", "gitlab.com", "/api/v4/projects", ["list_projects"]],
    ["gmail", "POST", "gmail.googleapis.com", "/gmail/v1/users/me/messages/send", ["send_message"]],
    ["gmail", "POST", "gmail.googleapis.com", "/gmail/v1/users/me/messages/m1/modify", ["modify_message"]],
    ["gmail", "GET", "gmail.googleapis.com", "/gmail/v1/users/me/messages/m1?format=full", ["get_message"]],
    ["google-calendar", "POST", "www.googleapis.com", "/calendar/v3/calendars/primary/events", ["create_event"]],
    ["google-calendar", "POST", "www.googleapis.com", "/calendar/v3/calendars/primary/events/quickAdd", ["quick_add_event"]],
    ["google-calendar", "DELETE", "www.googleapis.com", "/calendar/v3/calendars/primary/events/e1", ["delete_event"]],
    ["google-drive", "GET", "www.googleapis.com", "/drive/v3/files/f1?alt=media", ["get_file"]],
    ["google-drive", "POST", "www.googleapis.com", "/upload/drive/v3/files?uploadType=multipart", ["upload_file"]],
    ["google-drive", "POST", "www.googleapis.com", "/drive/v3/files/f1/permissions", ["share_file"]],
    ["slack", "POST", "slack.com", "/api/chat.postMessage", ["post_message"]],
    ["slack", "POST", "slack.com", "/api/conversations.history", ["get_conversation_history"]],
    ["slack", "GET", "slack.com", "/api/chat.postMessage", []],
    ["notion", "POST", "api.notion.com", "/v1/databases/d1/query", ["query_database"]],
    ["notion", "POST", "api.notion.com", "/v1/pages", ["create_page"]],
    ["notion", "GET", "api.notion.com", "/v1/blocks/b1/children?page_size=100", ["get_block_children"]],
    ["notion", "POST", "api.notion.com", "/v1/search", ["search"]],
    ["linear", "POST", "api.linear.app", "/graphql", ["graphql_query"]],
    ["jira", "POST", "api.atlassian.com", "/ex/jira/cloud-1/rest/api/3/issue", ["create_issue"]],
    ["jira", "GET", "api.atlassian.com", "/ex/jira/cloud-1/rest/api/3/search/jql?jql=project%3DX", ["search_issues"]],
    ["jira", "POST", "api.atlassian.com", "/ex/jira/cloud-1/rest/api/3/issue/X-1/transitions", ["transition_issue"]],
    ["jira", "GET", "api.atlassian.com", "/oauth/token/accessible-resources", ["list_accessible_resources"]],
    ["dropbox", "POST", "content.dropboxapi.com", "/2/files/download", ["download_file"]],
    ["dropbox", "POST", "api.dropboxapi.com", "/2/files/download", []],
    ["dropbox", "POST", "api.dropboxapi.com", "/2/files/list_folder/continue", ["list_folder"]],
    ["dropbox", "POST", "api.dropboxapi.com", "/2/files/search_v2", ["search_files"]],
    ["dropbox", "POST", "content.dropboxapi.com", "/2/files/upload_session/append_v2", ["upload_session"]],
    ["cloudflare", "POST", "api.cloudflare.com", "/client/v4/zones/z1/dns_records", ["create_dns_record"]],
    ["cloudflare", "GET", "api.cloudflare.com", "/client/v4/zones", ["list_zones"]],
    ["cloudflare", "POST", "api.cloudflare.com", "/client/v4/zones/z1/purge_cache", ["purge_cache"]],
    ["vercel", "GET", "api.vercel.com", "/v13/deployments/dpl_1", ["get_deployment"]],
    ["vercel", "PATCH", "api.vercel.com", "/v12/deployments/dpl_1/cancel", ["cancel_deployment"]],
    ["vercel", "POST", "api.vercel.com", "/v10/projects/p1/env", ["create_env_var"]],
    ["datadog", "POST", "api.datadoghq.com", "/api/v2/logs/events/search", ["search_logs"]],
    ["datadog", "POST", "api.datadoghq.com", "/api/v2/series", ["submit_metrics"]],
  ])("%s: %s %s%s", (id, method, host, path, expected) => {
    expect(toolsFor(id, method, host, path)).toEqual(expected);
  });
});

describe("concrete requests → host rules", () => {
  test("gitlab: bearer on the API, Basic oauth2 on git smart-HTTP paths, nothing elsewhere", async () => {
    const gl = app("gitlab");
    const injection = (path: string) => rulesFor(gl, "gitlab.com", path).map((i) => gl.hosts[i]!.inject);
    expect(injection("/api/v4/user")).toEqual([[{ kind: "bearer" } as AppInjection]]);
    const basic: AppInjection[][] = [[{ kind: "basic", username: "oauth2" }]];
    expect(injection("/grp/proj.git/info/refs?service=git-upload-pack")).toEqual(basic);
    expect(injection("/grp/proj.git/git-upload-pack")).toEqual(basic);
    expect(injection("/grp/sub/proj.git/git-receive-pack")).toEqual(basic);
    expect(injection("/a/b/c/d/proj.git/info/lfs/objects/batch")).toEqual(basic);
    expect(injection("/grp/proj/-/issues")).toEqual([]);
    expect(injection("/users/sign_in")).toEqual([]);
  });

  test("www.googleapis.com is split between the three Google apps by path", async () => {
    expect(appsServing("www.googleapis.com", "/gmail/v1/users/me/messages")).toEqual(["gmail"]);
    expect(appsServing("www.googleapis.com", "/calendar/v3/users/me/calendarList")).toEqual(["google-calendar"]);
    expect(appsServing("www.googleapis.com", "/drive/v3/files")).toEqual(["google-drive"]);
    expect(appsServing("www.googleapis.com", "/upload/drive/v3/files")).toEqual(["google-drive"]);
    expect(appsServing("www.googleapis.com", "/youtube/v3/videos")).toEqual([]);
    expect(appsServing("gmail.googleapis.com", "/gmail/v1/users/me/profile")).toEqual(["gmail"]);
  });

  test("slack only on /api/*; datadog on its documented sites", async () => {
    expect(appsServing("slack.com", "/api/auth.test")).toEqual(["slack"]);
    expect(appsServing("slack.com", "/oauth/v2/authorize")).toEqual([]);
    expect(appsServing("files.slack.com", "/files-pri/T1-F1/x.png")).toEqual([]);
    expect(appsServing("api.datadoghq.eu", "/api/v1/validate")).toEqual(["datadog"]);
    expect(appsServing("api.us5.datadoghq.com", "/api/v1/validate")).toEqual(["datadog"]);
  });
});

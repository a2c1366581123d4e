// Linear (OAuth app): one GraphQL endpoint on api.linear.app.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "api.linear.app";

export const linear: AppDefinition = {
  id: "linear",
  name: "Linear",
  description: "Issues, projects and comments in Linear.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://linear.app/oauth/authorize",
    tokenUrl: "https://api.linear.app/oauth/token",
    scopes: ["read", "write"],
    scopeSeparator: ",",
    pkce: true,
    account: {
      url: "https://api.linear.app/graphql",
      method: "POST",
      body: { query: "{ viewer { email name } }" },
      label: (b) => b?.data?.viewer?.email ?? b?.data?.viewer?.name,
    },
  },
  hosts: [{ host: API, inject: [{ kind: "bearer" }] }],
  blocklist: [{ id: "uploads", name: "Linear file uploads", hostPattern: "uploads.linear.app" }],
  // Every query and mutation is POST /graphql, so method + host + path cannot tell a read from a write: the
  // single tool is filed under `write` so granting "all reads" never silently grants mutations.
  tools: [tool("write", "graphql_query", "POST", API, "/graphql", "GraphQL request", "Run any Linear GraphQL query or mutation.")],
};

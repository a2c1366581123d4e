// Jira Cloud (Atlassian OAuth 2.0 3LO): product APIs through the api.atlassian.com gateway, per site cloud id.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "api.atlassian.com";
const J = "/ex/jira/*/rest/api/3"; // * = the site's cloud id (from accessible-resources)

export const jira: AppDefinition = {
  id: "jira",
  name: "Jira",
  description: "Search, read and update Jira Cloud issues.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://auth.atlassian.com/authorize",
    tokenUrl: "https://auth.atlassian.com/oauth/token",
    // offline_access → refresh token; read:me → the /me label lookup.
    scopes: ["read:jira-work", "write:jira-work", "read:jira-user", "read:me", "offline_access"],
    pkce: false,
    authorizeParams: { audience: "api.atlassian.com", prompt: "consent" },
    account: { url: "https://api.atlassian.com/me", label: (b) => b?.email ?? b?.name ?? b?.nickname },
  },
  hosts: [{ host: API, inject: [{ kind: "bearer" }] }],
  blocklist: [{ id: "sites", name: "Atlassian sites", hostPattern: "*.atlassian.net" }],
  // The default scopes cover Jira only; Confluence (/ex/confluence/*/wiki/…) needs its own scopes, so no
  // Confluence tools are listed.
  tools: [
    tool("read", "list_accessible_resources", "GET", API, "/oauth/token/accessible-resources", "List sites", "List the sites (cloud ids) the token can reach."),
    tool("read", "search_issues", "GET", API, `${J}/search/*`, "Search issues", "Search issues with JQL (/search and /search/jql)."),
    tool("read", "search_issues_post", "POST", API, `${J}/search/jql`, "Search issues (POST)", "Search issues with JQL in a request body."),
    tool("read", "get_issue", "GET", API, `${J}/issue/*`, "Get issue", "Read an issue, its comments and transitions."),
    tool("read", "list_projects", "GET", API, `${J}/project/*`, "List projects", "List or read projects."),
    tool("read", "get_myself", "GET", API, `${J}/myself`, "Get current user", "Read the signed-in user."),
    tool("write", "create_issue", "POST", API, `${J}/issue`, "Create issue", "Create an issue."),
    tool("write", "update_issue", "PUT", API, `${J}/issue/*`, "Update issue", "Edit an issue's fields or assignee."),
    tool("write", "add_comment", "POST", API, `${J}/issue/*/comment`, "Comment on issue", "Add a comment to an issue."),
    tool("write", "transition_issue", "POST", API, `${J}/issue/*/transitions`, "Transition issue", "Move an issue through its workflow."),
    tool("write", "add_worklog", "POST", API, `${J}/issue/*/worklog`, "Log work", "Add a worklog to an issue."),
    tool("write", "delete_issue", "DELETE", API, `${J}/issue/*`, "Delete issue", "Delete an issue."),
  ],
};

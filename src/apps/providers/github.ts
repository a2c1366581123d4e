// GitHub (OAuth app): REST on api.github.com, uploads, raw content, and git over HTTPS on github.com.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "api.github.com";

export const github: AppDefinition = {
  id: "github",
  name: "GitHub",
  description: "Repositories, issues, pull requests and git over HTTPS.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://github.com/login/oauth/authorize",
    tokenUrl: "https://github.com/login/oauth/access_token",
    scopes: ["repo", "read:user", "user:email"],
    pkce: true,
    account: { url: "https://api.github.com/user", label: (b) => b?.login ?? b?.name },
  },
  hosts: [
    { host: API, inject: [{ kind: "bearer" }] },
    { host: "uploads.github.com", inject: [{ kind: "bearer" }] },
    { host: "raw.githubusercontent.com", inject: [{ kind: "bearer" }] },
    // git smart HTTP wants Basic auth with the token as the password.
    { host: "github.com", inject: [{ kind: "basic", username: "x-access-token" }] },
  ],
  blocklist: [
    { id: "gist", name: "GitHub Gists", hostPattern: "gist.github.com" },
    { id: "uploads", name: "GitHub uploads", hostPattern: "uploads.github.com" },
  ],
  resources: "repositories",
  tools: [
    tool("read", "list_issues", "GET", API, "/repos/*/*/issues", "List issues", "List the issues of a repository."),
    tool("read", "get_issue", "GET", API, "/repos/*/*/issues/*", "Get issue", "Read one issue."),
    tool("read", "list_pull_requests", "GET", API, "/repos/*/*/pulls", "List pull requests", "List the pull requests of a repository."),
    tool("read", "get_pull_request", "GET", API, "/repos/*/*/pulls/*", "Get pull request", "Read one pull request."),
    tool("read", "get_contents", "GET", API, "/repos/*/*/contents/*", "Get file contents", "Read a file or directory."),
    tool("read", "list_repositories", "GET", API, "/user/repos", "List repositories", "List the user's repositories."),
    tool("read", "get_user", "GET", API, "/user", "Get user", "Read the signed-in user's profile."),
    tool("write", "create_issue", "POST", API, "/repos/*/*/issues", "Create issue", "Open a new issue."),
    tool("write", "update_issue", "PATCH", API, "/repos/*/*/issues/*", "Update issue", "Edit or close an issue."),
    tool("write", "create_issue_comment", "POST", API, "/repos/*/*/issues/*/comments", "Comment on issue", "Add a comment to an issue or pull request."),
    tool("write", "create_pull_request", "POST", API, "/repos/*/*/pulls", "Create pull request", "Open a pull request."),
    tool("write", "merge_pull_request", "PUT", API, "/repos/*/*/pulls/*/merge", "Merge pull request", "Merge a pull request."),
    tool("write", "create_or_update_file", "PUT", API, "/repos/*/*/contents/*", "Write file", "Create or update a file."),
    tool("write", "delete_file", "DELETE", API, "/repos/*/*/contents/*", "Delete file", "Delete a file."),
  ],
};

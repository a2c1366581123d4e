// GitLab.com (OAuth app): REST under /api/v4 and git over HTTPS, both on gitlab.com.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const HOST = "gitlab.com";
const P = "/api/v4/projects/*"; // project id or URL-encoded path (`group%2Fproject` is one raw segment)

// Git smart HTTP lives at /<namespace…>/<project>.git/{info/refs,git-upload-pack,git-receive-pack,info/lfs/…}.
// docs/injection.md#host-and-path-patterns has no "any depth" glob, so each namespace depth is its own segment-glob prefix: a project plus up to
// three levels of subgroups. Deeper subgroups get no git credential. A clone URL without `.git` first hits
// /<ns>/<project>/info/refs, which GitLab redirects (unauthenticated) to the `.git` form, which then matches.
const GIT_PATHS = ["/*/*.git/*", "/*/*/*.git/*", "/*/*/*/*.git/*", "/*/*/*/*/*.git/*"];

export const gitlab: AppDefinition = {
  id: "gitlab",
  name: "GitLab",
  description: "Projects, issues, merge requests and git over HTTPS on GitLab.com.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://gitlab.com/oauth/authorize",
    tokenUrl: "https://gitlab.com/oauth/token",
    scopes: ["api", "read_user", "read_repository", "write_repository"],
    pkce: true,
    account: { url: "https://gitlab.com/api/v4/user", label: (b) => b?.username ?? b?.email ?? b?.name },
  },
  hosts: [
    { host: HOST, paths: ["/api/*"], inject: [{ kind: "bearer" }] },
    { host: HOST, paths: GIT_PATHS, inject: [{ kind: "basic", username: "oauth2" }] },
  ],
  blocklist: [{ id: "registry", name: "GitLab container registry", hostPattern: "registry.gitlab.com" }],
  tools: [
    tool("read", "list_projects", "GET", HOST, "/api/v4/projects", "List projects", "List projects visible to the user."),
    tool("read", "list_issues", "GET", HOST, `${P}/issues`, "List issues", "List the issues of a project."),
    tool("read", "get_issue", "GET", HOST, `${P}/issues/*`, "Get issue", "Read one issue, its notes and links."),
    tool("read", "list_merge_requests", "GET", HOST, `${P}/merge_requests`, "List merge requests", "List the merge requests of a project."),
    tool("read", "get_merge_request", "GET", HOST, `${P}/merge_requests/*`, "Get merge request", "Read one merge request, its changes and notes."),
    tool("read", "get_file", "GET", HOST, `${P}/repository/files/*`, "Get file", "Read a file from a repository."),
    tool("read", "get_user", "GET", HOST, "/api/v4/user", "Get user", "Read the signed-in user's profile."),
    tool("write", "create_issue", "POST", HOST, `${P}/issues`, "Create issue", "Open a new issue."),
    tool("write", "update_issue", "PUT", HOST, `${P}/issues/*`, "Update issue", "Edit or close an issue."),
    tool("write", "create_issue_note", "POST", HOST, `${P}/issues/*/notes`, "Comment on issue", "Add a note to an issue."),
    tool("write", "create_merge_request", "POST", HOST, `${P}/merge_requests`, "Create merge request", "Open a merge request."),
    tool("write", "create_merge_request_note", "POST", HOST, `${P}/merge_requests/*/notes`, "Comment on merge request", "Add a note to a merge request."),
    tool("write", "accept_merge_request", "PUT", HOST, `${P}/merge_requests/*/merge`, "Merge merge request", "Merge a merge request."),
    tool("write", "create_file", "POST", HOST, `${P}/repository/files/*`, "Create file", "Create a file in a repository."),
    tool("write", "create_commit", "POST", HOST, `${P}/repository/commits`, "Create commit", "Commit several file changes at once."),
  ],
};

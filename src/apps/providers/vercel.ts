// Vercel (access token): the REST API on api.vercel.com; `/v*/` matches any endpoint version (v9, v10, v13…).
import { tool, type AppDefinition } from "../types.ts";

const API = "api.vercel.com";

export const vercel: AppDefinition = {
  id: "vercel",
  name: "Vercel",
  description: "Projects, deployments, environment variables and domains on Vercel.",
  connectionType: "api_key",
  fields: [{ name: "apiToken", label: "API Token", secret: true }],
  hosts: [{ host: API, inject: [{ kind: "bearer", field: "apiToken" }] }],
  blocklist: [],
  tools: [
    tool("read", "get_user", "GET", API, "/v*/user", "Get user", "Read the token's user."),
    tool("read", "list_projects", "GET", API, "/v*/projects", "List projects", "List projects."),
    // Covers the project's sub-resources too (env, domains, members).
    tool("read", "get_project", "GET", API, "/v*/projects/*", "Get project", "Read a project."),
    tool("read", "list_deployments", "GET", API, "/v*/deployments", "List deployments", "List deployments."),
    // Covers the deployment's build events and files too.
    tool("read", "get_deployment", "GET", API, "/v*/deployments/*", "Get deployment", "Read a deployment and its build logs."),
    tool("read", "list_domains", "GET", API, "/v*/domains", "List domains", "List domains."),
    tool("write", "create_deployment", "POST", API, "/v*/deployments", "Create deployment", "Create a deployment."),
    tool("write", "upload_deployment_file", "POST", API, "/v*/files", "Upload file", "Upload a file for a deployment."),
    tool("write", "cancel_deployment", "PATCH", API, "/v*/deployments/*/cancel", "Cancel deployment", "Cancel a building deployment."),
    tool("write", "delete_deployment", "DELETE", API, "/v*/deployments/*", "Delete deployment", "Delete a deployment."),
    tool("write", "create_project", "POST", API, "/v*/projects", "Create project", "Create a project."),
    tool("write", "update_project", "PATCH", API, "/v*/projects/*", "Update project", "Change a project's settings or environment variables."),
    tool("write", "create_env_var", "POST", API, "/v*/projects/*/env", "Create environment variable", "Add environment variables to a project."),
    tool("write", "delete_project", "DELETE", API, "/v*/projects/*", "Delete project", "Delete a project or one of its environment variables."),
  ],
};

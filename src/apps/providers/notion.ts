// Notion (public integration OAuth): the REST API on api.notion.com; the client sends Notion-Version itself.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "api.notion.com";

export const notion: AppDefinition = {
  id: "notion",
  name: "Notion",
  description: "Search, read and edit the Notion pages and databases shared with the integration.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://api.notion.com/v1/oauth/authorize",
    tokenUrl: "https://api.notion.com/v1/oauth/token",
    // Notion has no OAuth scopes: capabilities are set on the integration, pages are picked at consent.
    scopes: [],
    pkce: false,
    tokenAuth: "basic",
    authorizeParams: { owner: "user" },
    labelFromToken: (b) => b?.workspace_name ?? b?.owner?.user?.person?.email ?? b?.owner?.user?.name,
  },
  hosts: [{ host: API, inject: [{ kind: "bearer" }] }],
  // (`*.notion.site` is a public suffix, so public sites cannot be blocked with one wildcard.)
  blocklist: [{ id: "web", name: "Notion web app (and its unofficial API)", hostPattern: "www.notion.so" }],
  tools: [
    tool("read", "search", "POST", API, "/v1/search", "Search", "Search pages and databases by title."),
    tool("read", "get_page", "GET", API, "/v1/pages/*", "Get page", "Read a page and its properties."),
    tool("read", "get_database", "GET", API, "/v1/databases/*", "Get database", "Read a database's schema."),
    tool("read", "query_database", "POST", API, "/v1/databases/*/query", "Query database", "List database rows with filters and sorts."),
    tool("read", "query_data_source", "POST", API, "/v1/data_sources/*/query", "Query data source", "List data source rows (API 2025-09-03 and later)."),
    tool("read", "get_block_children", "GET", API, "/v1/blocks/*/children", "Get block children", "Read the content of a page or block."),
    tool("read", "list_users", "GET", API, "/v1/users", "List users", "List the workspace's users."),
    tool("read", "list_comments", "GET", API, "/v1/comments", "List comments", "Read the comments of a page or block."),
    tool("write", "create_page", "POST", API, "/v1/pages", "Create page", "Create a page or database row."),
    tool("write", "update_page", "PATCH", API, "/v1/pages/*", "Update page", "Change page properties, or archive a page."),
    tool("write", "append_block_children", "PATCH", API, "/v1/blocks/*/children", "Append content", "Append blocks to a page or block."),
    tool("write", "update_block", "PATCH", API, "/v1/blocks/*", "Update block", "Edit a block."),
    tool("write", "delete_block", "DELETE", API, "/v1/blocks/*", "Delete block", "Archive a block."),
    tool("write", "create_database", "POST", API, "/v1/databases", "Create database", "Create a database in a page."),
    tool("write", "create_comment", "POST", API, "/v1/comments", "Create comment", "Comment on a page or discussion."),
  ],
};

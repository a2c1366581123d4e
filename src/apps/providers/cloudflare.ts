// Cloudflare (API token): the v4 REST API (and GraphQL analytics) on api.cloudflare.com.
import { tool, type AppDefinition } from "../types.ts";

const API = "api.cloudflare.com";
const Z = "/client/v4/zones/*";
const A = "/client/v4/accounts/*";

export const cloudflare: AppDefinition = {
  id: "cloudflare",
  name: "Cloudflare",
  description: "Zones, DNS records, cache and Workers on Cloudflare.",
  connectionType: "api_key",
  fields: [{ name: "apiToken", label: "API Token", secret: true }],
  hosts: [{ host: API, inject: [{ kind: "bearer", field: "apiToken" }] }],
  blocklist: [],
  tools: [
    tool("read", "verify_token", "GET", API, "/client/v4/user/tokens/verify", "Verify token", "Check the API token is valid."),
    tool("read", "list_accounts", "GET", API, "/client/v4/accounts", "List accounts", "List the accounts the token can reach."),
    tool("read", "list_zones", "GET", API, "/client/v4/zones", "List zones", "List zones (domains)."),
    tool("read", "list_dns_records", "GET", API, `${Z}/dns_records`, "List DNS records", "List a zone's DNS records."),
    tool("read", "get_dns_record", "GET", API, `${Z}/dns_records/*`, "Get DNS record", "Read one DNS record."),
    tool("read", "list_workers", "GET", API, `${A}/workers/scripts`, "List Workers", "List an account's Worker scripts."),
    // The GraphQL Analytics API is read-only.
    tool("read", "query_analytics", "POST", API, "/client/v4/graphql", "Query analytics", "Query traffic analytics over GraphQL."),
    tool("write", "create_dns_record", "POST", API, `${Z}/dns_records`, "Create DNS record", "Create a DNS record."),
    tool("write", "update_dns_record", "PATCH", API, `${Z}/dns_records/*`, "Update DNS record", "Change a DNS record."),
    tool("write", "replace_dns_record", "PUT", API, `${Z}/dns_records/*`, "Replace DNS record", "Overwrite a DNS record."),
    tool("write", "delete_dns_record", "DELETE", API, `${Z}/dns_records/*`, "Delete DNS record", "Delete a DNS record."),
    tool("write", "purge_cache", "POST", API, `${Z}/purge_cache`, "Purge cache", "Purge cached content of a zone."),
    tool("write", "update_zone_setting", "PATCH", API, `${Z}/settings/*`, "Update zone setting", "Change a zone setting."),
    tool("write", "upload_worker", "PUT", API, `${A}/workers/scripts/*`, "Deploy Worker", "Upload a Worker script."),
  ],
};

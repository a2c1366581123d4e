// Datadog (API + application key): the v1/v2 REST API on each documented site's API host.
import { tool, type AppDefinition, type AppInjection } from "../types.ts";

const API = "api.datadoghq.com"; // US1; tools name this site only
const KEYS: AppInjection[] = [
  { kind: "header", name: "DD-API-KEY", field: "apiKey" },
  { kind: "header", name: "DD-APPLICATION-KEY", field: "appKey" },
];
// US1, US3, US5, EU1, AP1 (the keys work only on their own site; the others just answer 403).
const SITES = [API, "api.us3.datadoghq.com", "api.us5.datadoghq.com", "api.datadoghq.eu", "api.ap1.datadoghq.com"];

export const datadog: AppDefinition = {
  id: "datadog",
  name: "Datadog",
  description: "Metrics, logs, monitors, dashboards and events in Datadog.",
  connectionType: "api_key",
  fields: [
    { name: "apiKey", label: "API Key", secret: true },
    { name: "appKey", label: "Application Key", secret: true },
  ],
  hosts: SITES.map((host) => ({ host, inject: KEYS })),
  blocklist: [],
  tools: [
    tool("read", "validate_api_key", "GET", API, "/api/v1/validate", "Validate API key", "Check the API key is valid."),
    tool("read", "query_metrics", "GET", API, "/api/v1/query", "Query metrics", "Query timeseries points."),
    tool("read", "search_logs", "POST", API, "/api/v2/logs/events/search", "Search logs", "Search log events."),
    tool("read", "list_monitors", "GET", API, "/api/v1/monitor", "List monitors", "List monitors."),
    tool("read", "get_monitor", "GET", API, "/api/v1/monitor/*", "Get monitor", "Read one monitor."),
    tool("read", "list_dashboards", "GET", API, "/api/v1/dashboard", "List dashboards", "List dashboards."),
    tool("read", "get_dashboard", "GET", API, "/api/v1/dashboard/*", "Get dashboard", "Read one dashboard."),
    tool("read", "list_events", "GET", API, "/api/v2/events", "List events", "List events."),
    tool("read", "list_incidents", "GET", API, "/api/v2/incidents", "List incidents", "List incidents."),
    tool("write", "submit_metrics", "POST", API, "/api/v2/series", "Submit metrics", "Submit metric points."),
    tool("write", "post_event", "POST", API, "/api/v1/events", "Post event", "Post an event to the event stream."),
    tool("write", "create_monitor", "POST", API, "/api/v1/monitor", "Create monitor", "Create a monitor."),
    tool("write", "update_monitor", "PUT", API, "/api/v1/monitor/*", "Update monitor", "Change a monitor."),
    tool("write", "delete_monitor", "DELETE", API, "/api/v1/monitor/*", "Delete monitor", "Delete a monitor."),
    tool("write", "create_downtime", "POST", API, "/api/v2/downtime", "Schedule downtime", "Schedule a monitor downtime."),
  ],
};

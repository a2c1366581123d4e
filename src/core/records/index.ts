// Every record the API answers with, one schema each (docs/architecture.md#routes).
export * from "./accounts.ts";
export * from "./agents.ts";
export * from "./apps.ts";
export * from "./approvals.ts";
export * from "./budgets.ts";
export * from "./common.ts";
export * from "./grants.ts";
export * from "./logs.ts";
export * from "./migration.ts";
export * from "./notifications.ts";
export * from "./partner.ts";
export * from "./policy.ts";
export * from "./secrets.ts";
export * from "./setup.ts";
export * from "./mcp.ts";

// Resend (API key): transactional email.
import { tool, type AppDefinition } from "../types.ts";

const API = "api.resend.com";

export const resend: AppDefinition = {
  id: "resend",
  name: "Resend",
  description: "Send and read transactional email.",
  connectionType: "api_key",
  fields: [{ name: "apiKey", label: "API Key", secret: true }],
  hosts: [{ host: API, inject: [{ kind: "bearer", field: "apiKey" }] }],
  blocklist: [],
  tools: [
    tool("read", "list_emails", "GET", API, "/emails", "List emails", "List sent emails."),
    tool("read", "get_email", "GET", API, "/emails/*", "Get email", "Read one sent email."),
    tool("read", "list_domains", "GET", API, "/domains", "List domains", "List sending domains."),
    tool("write", "send_email", "POST", API, "/emails", "Send email", "Send one email."),
    tool("write", "create_batch", "POST", API, "/emails/batch", "Send batch", "Send up to 100 emails at once."),
    tool("write", "cancel_email", "POST", API, "/emails/*/cancel", "Cancel email", "Cancel a scheduled email."),
  ],
};

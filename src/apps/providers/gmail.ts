// Gmail (Google OAuth): the Gmail API on gmail.googleapis.com, plus its legacy www.googleapis.com/gmail paths.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "gmail.googleapis.com";
const U = "/gmail/v1/users/*"; // `me` or the account's address

export const gmail: AppDefinition = {
  id: "gmail",
  name: "Gmail",
  description: "Read, send and organize Gmail messages.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
    tokenUrl: "https://oauth2.googleapis.com/token",
    scopes: ["openid", "email", "https://www.googleapis.com/auth/gmail.modify"],
    pkce: true,
    authorizeParams: { access_type: "offline", prompt: "consent" },
    account: { url: "https://openidconnect.googleapis.com/v1/userinfo", label: (b) => b?.email ?? b?.name },
  },
  hosts: [
    { host: API, inject: [{ kind: "bearer" }] },
    { host: "www.googleapis.com", paths: ["/gmail/*"], inject: [{ kind: "bearer" }] },
  ],
  blocklist: [{ id: "gmail_web", name: "Gmail web", hostPattern: "mail.google.com" }],
  // Tools name the canonical gmail.googleapis.com host; uploads (/upload/gmail/…) are covered by no tool.
  tools: [
    tool("read", "list_messages", "GET", API, `${U}/messages`, "List messages", "List or search messages."),
    tool("read", "get_message", "GET", API, `${U}/messages/*`, "Get message", "Read one message and its attachments."),
    tool("read", "list_threads", "GET", API, `${U}/threads`, "List threads", "List or search conversation threads."),
    tool("read", "get_thread", "GET", API, `${U}/threads/*`, "Get thread", "Read one thread."),
    tool("read", "list_labels", "GET", API, `${U}/labels`, "List labels", "List the mailbox's labels."),
    tool("read", "list_drafts", "GET", API, `${U}/drafts`, "List drafts", "List draft messages."),
    tool("read", "get_profile", "GET", API, `${U}/profile`, "Get profile", "Read the mailbox address and counts."),
    tool("write", "send_message", "POST", API, `${U}/messages/send`, "Send message", "Send an email."),
    tool("write", "modify_message", "POST", API, `${U}/messages/*/modify`, "Modify message labels", "Add or remove labels, e.g. mark read or archive."),
    tool("write", "trash_message", "POST", API, `${U}/messages/*/trash`, "Trash message", "Move a message to the trash."),
    tool("write", "create_draft", "POST", API, `${U}/drafts`, "Create draft", "Save a draft message."),
    tool("write", "send_draft", "POST", API, `${U}/drafts/send`, "Send draft", "Send an existing draft."),
    tool("write", "create_label", "POST", API, `${U}/labels`, "Create label", "Create a label."),
  ],
};

// Slack (OAuth v2, bot token): the Web API, one method per path under slack.com/api.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "slack.com";

export const slack: AppDefinition = {
  id: "slack",
  name: "Slack",
  description: "Read channels and post messages as a Slack bot.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://slack.com/oauth/v2/authorize",
    tokenUrl: "https://slack.com/api/oauth.v2.access",
    scopes: ["channels:read", "channels:history", "groups:read", "groups:history", "chat:write", "reactions:write", "users:read", "files:read"],
    scopeSeparator: ",",
    // Slack accepts PKCE only once the app is switched (irreversibly) to a public client; BYOC apps are not.
    pkce: false,
    labelFromToken: (b) => b?.team?.name ?? b?.team?.id,
  },
  hosts: [{ host: API, paths: ["/api/*"], inject: [{ kind: "bearer" }] }],
  blocklist: [
    { id: "files", name: "Slack file downloads", hostPattern: "files.slack.com" },
    { id: "webhooks", name: "Slack incoming webhooks", hostPattern: "hooks.slack.com" },
  ],
  // Web API methods are POST /api/<method>. Slack also answers reads over GET; those GET forms are not
  // listed, so a grant naming only these tools covers the POST form (what the official SDKs send).
  tools: [
    tool("read", "list_conversations", "POST", API, "/api/conversations.list", "List conversations", "List channels the bot can see."),
    tool("read", "get_conversation_info", "POST", API, "/api/conversations.info", "Get conversation", "Read a channel's details."),
    tool("read", "get_conversation_history", "POST", API, "/api/conversations.history", "Read channel history", "Read the messages of a channel."),
    tool("read", "get_conversation_replies", "POST", API, "/api/conversations.replies", "Read thread", "Read the replies of a thread."),
    tool("read", "list_users", "POST", API, "/api/users.list", "List users", "List the workspace's members."),
    tool("read", "get_user_info", "POST", API, "/api/users.info", "Get user", "Read one member's profile."),
    tool("read", "get_file_info", "POST", API, "/api/files.info", "Get file", "Read a file's details."),
    tool("write", "post_message", "POST", API, "/api/chat.postMessage", "Post message", "Send a message to a channel."),
    tool("write", "update_message", "POST", API, "/api/chat.update", "Update message", "Edit a message the bot sent."),
    tool("write", "delete_message", "POST", API, "/api/chat.delete", "Delete message", "Delete a message the bot sent."),
    tool("write", "add_reaction", "POST", API, "/api/reactions.add", "Add reaction", "React to a message with an emoji."),
    tool("write", "join_conversation", "POST", API, "/api/conversations.join", "Join channel", "Join a public channel."),
  ],
};

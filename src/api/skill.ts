// The gateway skill (docs/api.md#agent-setup): markdown an agent reads to learn how to work behind credgate.
// Every agent-facing error code of docs/agent-errors.md#summary is explained, so an agent can tell the user what to do.

export const GATEWAY_SKILL = `---
name: credgate-gateway
description: How to make HTTP(S) requests through the credgate gateway, which adds real credentials for you.
---

# Working behind the credgate gateway

Your outbound HTTP and HTTPS traffic goes through **credgate**, a proxy that holds the real API keys and
OAuth tokens on the user's behalf. You never see them, and you do not need them.

## How to make requests

- Use your normal HTTP client. The proxy is already configured through \`HTTPS_PROXY\` / \`HTTP_PROXY\`
  (\`http://x:<agent token>@<gateway>\`), and the gateway's CA certificate is trusted through
  \`NODE_EXTRA_CA_CERTS\`, \`SSL_CERT_FILE\` or \`REQUESTS_CA_BUNDLE\`. Do not disable TLS verification.
- Call the real API hosts (for example \`https://api.github.com\`, \`https://api.anthropic.com\`). credgate
  recognises the host and path and injects the matching credential into the request before it leaves.
- Wherever a tool or SDK insists on an API key or token, use the placeholder **\`credgate-managed\`**. The
  gateway replaces it with the real value. Variables such as \`ANTHROPIC_API_KEY\` or \`OPENAI_API_KEY\` may
  already be set to this placeholder: that is expected, leave them as they are.
- Never ask the user to paste a secret into the conversation. If a credential is missing, tell the user
  what to add in credgate (the error responses below include the link).
- If several connections of one app exist, choose one with the header
  \`x-credgate-connection-id: <id>\`; the list comes back in the \`x-credgate-connections\` response header.

## Databases

- When \`CREDGATE_DB_<NAME>_URL\` variables (or \`PGHOST\`, \`PGUSER\`, …) are set, connect to PostgreSQL with
  them as they are: \`psql "$CREDGATE_DB_ORDERS_URL"\`, or pass the URL to your driver. The password in them is
  your agent token, not the database's: credgate logs in to the real database for you. Keep the \`sslmode\` given.
- A refusal is a PostgreSQL error whose message starts with \`credgate:\` (the credential is read-only, writes
  are blocked, a write was not approved). Do not retry a refused write; tell the user. A write may also wait
  for a person's approval before it runs.

## git over SSH

- You hold no SSH key: credgate logs in to the git server for you. Under \`credgate run\`, \`git\` and \`ssh\` are
  set up already (\`GIT_SSH_COMMAND\`). In a container, point ssh at the gateway with \`socat\` (the values come
  from your \`HTTPS_PROXY\`, \`http://x:<agent token>@<gateway host>:<gateway port>\`):

  \`\`\`
  mkdir -p -m 700 ~/.ssh
  curl -fsS --noproxy '*' http://<gateway host>:<gateway port>/v1/gateway/ssh-ca > ~/.ssh/credgate_known_hosts
  cat >> ~/.ssh/config <<'EOF'
  Host *
    ProxyCommand socat - PROXY:<gateway host>:%h:%p,proxyport=<gateway port>,proxyauth=x:<agent token>
    UserKnownHostsFile ~/.ssh/credgate_known_hosts
    StrictHostKeyChecking yes
    IdentityFile none
  EOF
  \`\`\`
- Only git commands run (clone, fetch, push); no shell, terminal, sftp or forwarding. A refusal is a line on
  stderr starting with \`credgate:\`; a push may wait for a person's approval. Do not retry a refused push; tell
  the user.

## Errors the gateway returns

Every gateway error is JSON: \`{"error": "<code>", "message": "...", ...}\`. Responses with the header
\`x-should-retry: false\` will fail the same way if retried; tell the user instead.

| Code | Status | What it means and what to do |
|---|---|---|
| \`proxy_authentication_required\` | 407 | The agent token is missing or was regenerated. Ask the user for a fresh proxy configuration. |
| \`blocked_by_policy\` | 403 | A policy rule (\`rule_name\`) forbids this request. Do not retry; tell the user which rule blocked what. |
| \`blocked_by_default_policy\` | 403 | Nothing allows this destination and the default is to deny. Ask the user to allow it. |
| \`rate_limited\` | 429 | A policy rate limit was reached (\`limit\` per \`window\`). Wait for \`Retry-After\` seconds. |
| \`manual_approval_denied\` | 403 | A human reviewer denied the request, or did not answer in time. Do not retry without asking. |
| \`gateway_restarting\` | 503 | The gateway restarted while the request waited for approval. Retry after \`Retry-After\`. |
| \`approval_store_unavailable\` | 502 | Approvals are temporarily unavailable. Retry later. |
| \`budget_exceeded\` | 403 | A spend budget is used up: this agent's, its project's or its organization's (\`scope\`; do not retry before \`resets_at\`), or the partner's on this LLM key (the user can add their own key: \`add_key_url\`). Tell the user. |
| \`claim_required\` | 403 | The organization must be claimed first (\`claim_url\`). LLM calls still work. |
| \`resource_access_denied\` | 403 | The connection is limited to certain repositories or folders (\`allowed\`). Stay within them. |
| \`connection_not_found\` | 404 | The \`x-credgate-connection-id\` you sent is not available. Pick one from \`connections\`. |
| \`multiple_connections\` | 409 | Several connections of this app exist. Send \`x-credgate-connection-id\` (see \`example\`). |
| \`multiple_providers\` | 409 | Several apps could serve this request. Send \`x-credgate-connection-id\`. |
| \`credential_unavailable\` | 502 | credgate could not obtain the credential (vault or token refresh failed). Retry later or tell the user. |
| \`upstream_unreachable\` | 502 | The destination could not be reached. Check the host name; retry later. |
| \`upstream_timeout\` | 504 | The destination did not answer in time. Retry later. |
| \`bad_gateway\` | 502 | An internal gateway error. Retry once, then tell the user. |
| \`access_restricted\` | as upstream | Credentials exist but this agent may not use them. Ask the user to attach them (\`manage_url\`). |
| \`app_not_connected\` | as upstream | The app is not connected. Ask the user to connect it (\`connect_url\`). |
| \`credential_not_found\` | as upstream | No credential is configured for this host. Ask the user to add one (\`secret_url\`). |
`;

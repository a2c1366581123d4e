// `claim_required` (docs/guards.md#claim-required, cloud): an organization a partner set up and nobody has claimed yet gets
// its LLM requests through, and nothing else — not WebSocket upgrades, not passthrough tunnels — until a person
// opens the claim link, which the answer carries.
import { normalizeHost } from "../core/patterns.ts";

/** The organization's unclaimed state, as the agent's snapshot holds it. */
export interface ClaimPending {
  partnerName: string;
  claimUrl: string;
}

/** LLM vendors' domains: a host is a vendor's when it is one of them or a subdomain of it (label-wise, docs/guards.md#claim-required). */
const LLM_HOSTS = ["anthropic.com", "openai.com", "chatgpt.com", "deepseek.com", "groq.com", "openrouter.ai", "moonshot.cn", "generativelanguage.googleapis.com"];

/** `host` (normalized) is `domain` or below it: `api.openai.com` is OpenAI's, `openai.com.evil.test` and `notopenai.com` are not. */
function isVendorHost(host: string, domain: string): boolean {
  return host === domain || (host.length > domain.length && host.endsWith(domain) && host.charCodeAt(host.length - domain.length - 1) === 46 /* . */);
}

/** What isLlmRequest reads of a compiled secret (snapshot.ts). */
export interface HostBoundSecret {
  type: string;
  hostMatch(host: string): boolean;
  pathMatch(path: string): boolean;
}

/**
 * An LLM vendor's host, or a host an LLM key of the agent applies to (for every reading of this path, when one
 * is known: docs/injection.md#every-reading-of-a-path).
 */
export function isLlmRequest(host: string, readings: readonly string[] | null, injectable: readonly HostBoundSecret[]): boolean {
  const h = normalizeHost(host);
  if (LLM_HOSTS.some((v) => isVendorHost(h, v))) return true;
  return injectable.some((s) => (s.type === "llm_a" || s.type === "llm_b") && s.hostMatch(h) && (readings === null || readings.every((p) => s.pathMatch(p))));
}

export function claimRequiredBody(claim: ClaimPending): { error: string; message: string; claim_url: string } {
  return {
    error: "claim_required",
    message: `This organization was set up by ${claim.partnerName} and has not been claimed yet, so non-LLM requests are paused. Ask the user to open the claim link: ${claim.claimUrl}`,
    claim_url: claim.claimUrl,
  };
}

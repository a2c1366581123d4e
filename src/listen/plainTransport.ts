// The start-up warning of docs/operations.md#tls: a listener that other machines can reach, advertised as plain http://, lets
// anyone on that network read the keys and agent tokens sent to it. Printed by `serve`, reported by `doctor`.
import { isIP } from "node:net";
import type { Config } from "../runtime/config.ts";

/** Whether a bind address admits only this machine. */
export function bindsLoopbackOnly(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  return h === "::1";
}

const isPlain = (url: string) => url.toLowerCase().startsWith("http:");

/** One line per listener open to the network in clear (empty when there is none). */
export function plainTransportWarnings(config: Pick<Config, "host" | "publicUrl" | "gatewayUrl" | "apiTls">): string[] {
  if (bindsLoopbackOnly(config.host)) return [];
  const lines: string[] = [];
  const line = (port: string, variable: string) =>
    `credgate: the ${port} port accepts plain HTTP from the network: keys and agent tokens cross it in clear (set ${variable} to use TLS)`;
  if (config.apiTls.kind === "none" && isPlain(config.publicUrl)) lines.push(line("API", "CREDGATE_TLS=gateway-ca or CREDGATE_TLS_CERT_FILE and CREDGATE_TLS_KEY_FILE"));
  if (isPlain(config.gatewayUrl)) lines.push(line("gateway", "CREDGATE_GATEWAY_URL=https://…"));
  return lines;
}

// The names credgate answers to, for its own certificates (docs/operations.md#tls): loopback, every interface
// address, the hosts of the URLs it advertises, and CREDGATE_TLS_NAMES.
import { networkInterfaces } from "node:os";
import type { Config } from "../runtime/config.ts";

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, "") || null;
  } catch {
    return null;
  }
}

export function selfNames(config: Pick<Config, "gatewayUrl" | "publicUrl" | "containerGatewayHost" | "tlsNames">): string[] {
  const names = ["localhost", "127.0.0.1", "::1"];
  for (const list of Object.values(networkInterfaces())) {
    for (const addr of list ?? []) if (!addr.address.startsWith("fe80:")) names.push(addr.address);
  }
  for (const url of [config.gatewayUrl, config.publicUrl, `http://${config.containerGatewayHost}`]) {
    const host = hostOf(url);
    if (host) names.push(host);
  }
  names.push(...config.tlsNames);
  return [...new Set(names.map((n) => n.toLowerCase()))];
}

// A CONNECT and the tunnel it opens (docs/gateway.md#tunnels): the connect hooks of the stages run on it
// before anything is answered (auth, egress guard, passthrough decision, claim), the listener then opens it —
// intercepted (TLS terminated with a leaf for the host, or plain) or passthrough (raw bytes to the host) — and
// every request inside an intercepted tunnel is a ProxyRequest that refers back to it.
import * as net from "node:net";
import { normalizeHost } from "../core/patterns.ts";
import { REQUEST_ID_HEADER, requestIdFor } from "../observability/requestId.ts";
import { TRACEPARENT_HEADER } from "../observability/traceContext.ts";
import type { EgressVerdict } from "./egressGuard.ts";
import { Flow, displayHostOf } from "./flow.ts";
import { headerValue, type RequestHead } from "./http1/head.ts";
import { proxyToken } from "./proxyAuth.ts";

export class Tunnel extends Flow {
  /** The agent token of the CONNECT's Proxy-Authorization; every request inside is checked against it again. */
  readonly token: string | null;
  /** Bytes the agent sent after the CONNECT head: already the tunnel's. */
  readonly early: Buffer;
  /** The egress guard's verdict on the host (egress stage: [dial], stage.ts StageKey); a passthrough tunnel dials what it says. */
  egress: EgressVerdict | null = null;
  /**
   * A tunnel to a cloud metadata host that the gateway answers itself, request by request, and never dials
   * (cloud-placeholders stage; docs/cloud-identities.md#placeholders): the egress guard lets it open.
   */
  local = false;
  /** Raw bytes to the host instead of interception (passthrough stage: [passthrough]). */
  passthrough = false;
  /** The status the CONNECT was answered with (0 until it is; set by Pipeline.connected). */
  status = 0;
  /** The CONNECT's `traceparent`, continued when tracing is on (docs/operations.md#traces). */
  readonly traceparent: string | null;

  constructor(
    head: RequestHead,
    authority: { host: string; port: number },
    early: Buffer,
  ) {
    const host = normalizeHost(authority.host);
    super(requestIdFor(headerValue(head.headers, REQUEST_ID_HEADER)), host, authority.port, displayHostOf("https", host, authority.port));
    this.token = proxyToken(headerValue(head.headers, "proxy-authorization"));
    this.early = early;
    this.traceparent = headerValue(head.headers, TRACEPARENT_HEADER);
  }

  /** `host[:port]` for the Host header of the requests inside: brackets kept, the scheme's default port dropped. */
  authorityFor(scheme: "https" | "http"): string {
    const bracketed = net.isIPv6(this.host) ? `[${this.host}]` : this.host;
    return this.port === (scheme === "https" ? 443 : 80) ? bracketed : `${bracketed}:${this.port}`;
  }
}

// curl through the real gateway: the client most agents' tools amount to, with proxy auth and the gateway CA.
import { parseHead, run } from "./gateway.ts";
import type { RunningCredgate } from "./process.ts";

export interface CurlResult {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: any;
  ms: number;
}

export interface CurlOptions {
  method?: string;
  headers?: string[];
  dataFile?: string;
  data?: string;
  agentToken?: string;
  /** The gateway CA file curl trusts. */
  caFile?: string;
  maxTime?: number;
  /** Send the path exactly as written (`--path-as-is`: no dot-segment squashing). */
  pathAsIs?: boolean;
}

/** One request through the gateway with curl (CONNECT + MITM); the CONNECT answer is skipped. */
export async function curlThroughGateway(c: RunningCredgate, target: string, opts: CurlOptions & { caFile: string }): Promise<CurlResult> {
  const args = ["curl", "-sS", "-i", "--proxy", `http://x:${opts.agentToken ?? c.keys.defaultAgentToken}@127.0.0.1:${c.gatewayPort}`, "--cacert", opts.caFile, "--max-time", String(opts.maxTime ?? 30), "-H", "Expect:"];
  if (opts.method) args.push("-X", opts.method);
  if (opts.pathAsIs) args.push("--path-as-is");
  for (const h of opts.headers ?? []) args.push("-H", h);
  if (opts.dataFile) args.push("--data-binary", `@${opts.dataFile}`);
  if (opts.data !== undefined) args.push("--data-binary", opts.data);
  args.push(target);
  const t0 = performance.now();
  const r = await run(args, { timeoutMs: (opts.maxTime ?? 30) * 1000 + 5000 });
  const ms = performance.now() - t0;
  if (r.code !== 0) throw new Error(`curl failed (${r.code}): ${r.stderr}`);
  let out = Buffer.from(r.stdoutBytes);
  // Skip the CONNECT answer (and any interim response).
  for (;;) {
    const end = out.indexOf("\r\n\r\n");
    const head = parseHead(out.subarray(0, end));
    out = out.subarray(end + 4);
    if (/Connection Established/i.test(head.statusLine) || head.status === 100) continue;
    const text = out.toString("utf8");
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: head.status, headers: head.headers, text, json, ms };
  }
}


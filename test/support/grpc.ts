// A real gRPC origin for gateway tests: @grpc/grpc-js's server over TLS (the throwaway PKI of upstream.ts) with
// the four call kinds of echo.proto, recording the metadata of every call. Its answers never echo metadata, so
// a credential a client sees can only have come from the gateway.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { TestPki } from "./upstream.ts";

export const ECHO_PROTO = join(import.meta.dir, "grpc/echo.proto");

export interface Msg {
  text: string;
  n: number;
}

export interface SeenCall {
  method: string;
  metadata: Record<string, string>;
}

export interface GrpcOrigin {
  port: number;
  seen: SeenCall[];
  stop(): Promise<void>;
}

/** The Echo service's client constructor (for in-process clients and for the origin's definition). */
export function echoService(): grpc.ServiceClientConstructor {
  const def = protoLoader.loadSync(ECHO_PROTO, { defaults: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { credgate: { test: { Echo: grpc.ServiceClientConstructor } } };
  return pkg.credgate.test.Echo;
}

function record(seen: SeenCall[], method: string, metadata: grpc.Metadata): void {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata.getMap())) flat[k] = String(v);
  seen.push({ method, metadata: flat });
}

/**
 * Unary answers `echo:<text>` with n+1; ServerStream sends n messages; ClientStream answers the joined texts
 * and their count; Bidi answers each message as it comes. A text of `fail` ends the call with status
 * FAILED_PRECONDITION and the message `no ünïcode 100%` (to see grpc-message pass through encoded).
 */
export async function startGrpcOrigin(pki: TestPki): Promise<GrpcOrigin> {
  const seen: SeenCall[] = [];
  const server = new grpc.Server();
  const failure = { code: grpc.status.FAILED_PRECONDITION, details: "no ünïcode 100%" };
  server.addService(echoService().service, {
    Unary(call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
      record(seen, "Unary", call.metadata);
      if (call.request.text === "fail") return cb(failure);
      const trailer = new grpc.Metadata();
      trailer.set("x-origin-trailer", "unary");
      cb(null, { text: `echo:${call.request.text}`, n: call.request.n + 1 }, trailer);
    },
    ServerStream(call: grpc.ServerWritableStream<Msg, Msg>) {
      record(seen, "ServerStream", call.metadata);
      for (let i = 0; i < call.request.n; i++) call.write({ text: `${call.request.text}#${i}`, n: i });
      call.end();
    },
    ClientStream(call: grpc.ServerReadableStream<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
      record(seen, "ClientStream", call.metadata);
      const texts: string[] = [];
      call.on("data", (m: Msg) => texts.push(m.text));
      call.on("end", () => cb(null, { text: texts.join(","), n: texts.length }));
    },
    Bidi(call: grpc.ServerDuplexStream<Msg, Msg>) {
      record(seen, "Bidi", call.metadata);
      call.on("data", (m: Msg) => call.write({ text: `echo:${m.text}`, n: m.n }));
      call.on("end", () => call.end());
    },
  });
  const creds = grpc.ServerCredentials.createSsl(null, [{ cert_chain: readFileSync(pki.certFile), private_key: readFileSync(pki.keyFile) }], false);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", creds, (err, p) => (err ? reject(err) : resolve(p))));
  return {
    port,
    seen,
    stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

// A TCP relay between a client and a listener of credgate that keeps every byte the client sent, connection
// by connection: what anyone on the network between them could read.
import * as net from "node:net";

export interface CaptureRelay {
  port: number;
  /** What each connection's client sent, in order. */
  sent: Buffer[][];
  /** Everything that crossed in either direction. */
  all(): Buffer;
  close(): void;
}

export async function startCaptureRelay(targetPort: number): Promise<CaptureRelay> {
  const sent: Buffer[][] = [];
  const both: Buffer[] = [];
  const server = net.createServer((client) => {
    const mine: Buffer[] = [];
    sent.push(mine);
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    client.on("data", (d: Buffer) => (mine.push(d), both.push(d)));
    upstream.on("data", (d: Buffer) => both.push(d));
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    sent,
    all: () => Buffer.concat(both),
    close: () => server.close(),
  };
}

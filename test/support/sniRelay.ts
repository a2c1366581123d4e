// A counting TCP relay that reads the server name a TLS client asks for: it accepts a connection, reads the first
// TLS record (the ClientHello), takes the server_name extension (RFC 6066 §3) out of it by hand, records it, and then
// relays the bytes both ways to `127.0.0.1:<target>` unchanged (TLS stays end to end between client and server).
// Tests put it between a proxy and a TLS server to see what reached the server and under which name; a connection
// whose first bytes are not a TLS handshake is recorded with `sni: null` and relayed all the same.
import * as net from "node:net";

export interface RelayedConnection {
  /** The ClientHello's server name; null without one, or when the first bytes were not a TLS handshake. */
  sni: string | null;
  /** The peer's address (the proxy's or credgate's side of the connection). */
  from: string;
}

export interface SniRelay {
  port: number;
  host: string;
  connections: RelayedConnection[];
  stop(): Promise<void>;
}

/** The server_name of a complete ClientHello record, or null. */
export function serverNameOf(record: Buffer): string | null {
  if (record.length < 5 || record[0] !== 0x16) return null;
  let i = 5;
  if (record[i] !== 0x01) return null; // handshake type client_hello
  i += 4; // type + 24-bit length
  i += 2 + 32; // legacy_version + random
  i += 1 + record[i]!; // legacy_session_id
  i += 2 + record.readUInt16BE(i); // cipher_suites
  i += 1 + record[i]!; // legacy_compression_methods
  if (i + 2 > record.length) return null;
  const end = i + 2 + record.readUInt16BE(i);
  i += 2;
  while (i + 4 <= end && i + 4 <= record.length) {
    const type = record.readUInt16BE(i);
    const length = record.readUInt16BE(i + 2);
    i += 4;
    if (type === 0x0000) {
      // server_name_list: 16-bit list length, then entries of (1-byte type, 16-bit length, name); 0 = host_name
      let j = i + 2;
      while (j + 3 <= i + length) {
        const nameType = record[j]!;
        const nameLength = record.readUInt16BE(j + 1);
        if (nameType === 0) return record.subarray(j + 3, j + 3 + nameLength).toString("ascii");
        j += 3 + nameLength;
      }
      return null;
    }
    i += length;
  }
  return null;
}

/** A relay on `host` (loopback unless given: inside a network namespace any local address) to 127.0.0.1:`target`. */
export function startSniRelay(target: number, opts: { host?: string; port?: number } = {}): Promise<SniRelay> {
  const host = opts.host ?? "127.0.0.1";
  const connections: RelayedConnection[] = [];
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on("close", () => open.delete(client));
    client.on("error", () => {});
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const tls = head[0] === 0x16;
      if (tls && (head.length < 5 || head.length < 5 + head.readUInt16BE(3))) return;
      client.off("data", onData);
      client.pause();
      connections.push({ sni: tls ? serverNameOf(head) : null, from: client.remoteAddress ?? "" });
      const upstream = net.connect({ host: "127.0.0.1", port: target }, () => {
        upstream.write(head);
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
      open.add(upstream);
      upstream.on("close", () => {
        open.delete(upstream);
        client.destroy();
      });
      upstream.on("error", () => client.destroy());
      client.on("close", () => upstream.destroy());
    };
    client.on("data", onData);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        host,
        connections,
        stop: () =>
          new Promise<void>((done) => {
            for (const s of open) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

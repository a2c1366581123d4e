// A small authoritative DNS server on loopback UDP for the tests and the bench (docs/operations.md#dns): it answers
// A and AAAA queries for the names it is given, with the TTL chosen per name, NXDOMAIN for any other name, and
// counts every query it receives. The wire format (RFC 1035: header, question, answer records with a compressed
// name pointer) is encoded by hand here, not by our own code.
import { createSocket, type Socket } from "node:dgram";
import { isIPv4, isIPv6 } from "node:net";

export interface DnsRecord {
  /** IPv4 and IPv6 addresses; a name with neither answers "no data" (NOERROR, no records). */
  addresses: string[];
  ttl: number;
}

export interface Query {
  name: string;
  type: "A" | "AAAA" | number;
}

export interface TestDnsServer {
  port: number;
  /** `127.0.0.1:<port>`, for CREDGATE_DNS_SERVERS. */
  address: string;
  /** Sets (or replaces) a name's records. */
  set(name: string, record: DnsRecord): void;
  remove(name: string): void;
  /** Every query received, in order. */
  queries: Query[];
  /** Queries for `name` (of type A when `type` is given as "A"). */
  count(name: string, type?: "A" | "AAAA"): number;
  /** Milliseconds to wait before answering. */
  delayMs: number;
  stop(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  while (at < msg.length && msg[at] !== 0) {
    const length = msg[at]!;
    labels.push(msg.subarray(at + 1, at + 1 + length).toString("latin1"));
    at += 1 + length;
  }
  return { name: labels.join(".").toLowerCase(), end: at + 1 };
}

function addressBytes(address: string): Buffer {
  if (isIPv4(address)) return Buffer.from(address.split(".").map(Number));
  const [head, tail = ""] = address.split("::");
  const groups = (s: string) => (s ? s.split(":") : []);
  const h = groups(head!);
  const t = groups(tail);
  const all = address.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

export async function startDnsServer(records: Record<string, DnsRecord> = {}): Promise<TestDnsServer> {
  const names = new Map(Object.entries(records).map(([k, v]) => [k.toLowerCase(), v]));
  const queries: Query[] = [];
  const socket: Socket = createSocket("udp4");
  const server: TestDnsServer = {
    port: 0,
    address: "",
    set: (name, record) => void names.set(name.toLowerCase(), record),
    remove: (name) => void names.delete(name.toLowerCase()),
    queries,
    count: (name, type) => queries.filter((q) => q.name === name.toLowerCase() && (type === undefined || q.type === type)).length,
    delayMs: 0,
    stop: () => new Promise((resolve) => socket.close(() => resolve())),
  };
  socket.on("message", (msg, peer) => {
    if (msg.length < 12) return;
    const { name, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    const type = qtype === 1 ? "A" : qtype === 28 ? "AAAA" : qtype;
    queries.push({ name, type });
    const record = names.get(name);
    const answers: Buffer[] = [];
    if (record) {
      for (const address of record.addresses) {
        if ((type === "A" && !isIPv4(address)) || (type === "AAAA" && !isIPv6(address)) || typeof type === "number") continue;
        const data = addressBytes(address);
        const rr = Buffer.alloc(12);
        rr.writeUInt16BE(0xc00c, 0); // the question's name
        rr.writeUInt16BE(qtype, 2);
        rr.writeUInt16BE(1, 4); // IN
        rr.writeUInt32BE(record.ttl, 6);
        rr.writeUInt16BE(data.length, 10);
        answers.push(rr, data);
      }
    }
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    // QR, opcode 0, AA, RD copied, RA; RCODE 3 (NXDOMAIN) for unknown names.
    header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | (record ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length / 2, 6);
    const reply = Buffer.concat([header, msg.subarray(12, end + 4), ...answers]);
    const send = () => socket.send(reply, peer.port, peer.address);
    if (server.delayMs > 0) setTimeout(send, server.delayMs);
    else send();
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", () => resolve()));
  server.port = socket.address().port;
  server.address = `127.0.0.1:${server.port}`;
  return server;
}

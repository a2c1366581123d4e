// Runs inside its own network namespace (test/e2e/database-listener.test.ts starts it with `unshare -n`), where
// 10.1.2.3 sits on `lo`: a peer that is not loopback, with no packet able to leave the namespace. credgate listens
// on every address; clients connect to its database listener from 10.1.2.3, without and with TLS, and from
// 127.0.0.1. Prints one JSON document with what each attempt got.
import * as net from "node:net";
import { pgConnectError, psql } from "./databaseClients.ts";
import { gatewayCa } from "./gateway.ts";
import { startCredgate } from "./process.ts";

const ADDRESS = "10.1.2.3";

/** The first message credgate answers a plain startup from `local` with: its type and, for an error, its fields. */
function firstAnswer(local: string, port: number): Promise<{ type: string; fields: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: ADDRESS, port, localAddress: local });
    const params = Buffer.from("user\0db_any\0database\0app\0\0");
    const head = Buffer.alloc(8);
    head.writeInt32BE(8 + params.length, 0);
    head.writeInt32BE(196608, 4);
    sock.on("connect", () => sock.write(Buffer.concat([head, params])));
    let buf = Buffer.alloc(0);
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < 5 || buf.length < 1 + buf.readInt32BE(1)) return;
      const type = String.fromCharCode(buf[0]!);
      const fields: Record<string, string> = {};
      if (type === "E") {
        let i = 5;
        while (i < 1 + buf.readInt32BE(1) && buf[i] !== 0) {
          const code = String.fromCharCode(buf[i]!);
          const end = buf.indexOf(0, i + 1);
          fields[code] = buf.subarray(i + 1, end).toString("utf8");
          i = end + 1;
        }
      }
      sock.destroy();
      resolve({ type, fields });
    });
    sock.on("error", reject);
    sock.setTimeout(15_000, () => reject(new Error("no answer within 15 s")));
  });
}

const cg = await startCredgate({ args: ["--host", "0.0.0.0"] });
try {
  const ca = await gatewayCa(cg);
  const token = cg.keys.defaultAgentToken;
  const url = (host: string, sslmode: string, tok = token) =>
    `postgresql://db_any:${encodeURIComponent(tok)}@${host}:${cg.dbPort}/app?sslmode=${sslmode}${sslmode === "verify-full" ? `&sslrootcert=${ca.file}` : ""}`;
  // The first start prints the token in its banner: only what is written from here on is searched.
  const mark = cg.output().length;
  // libpq connects from the address it dials when that address is local: 10.1.2.3 → 10.1.2.3.
  const plainPsql = await psql(url(ADDRESS, "disable"), "SELECT 1");
  const plainPg = await pgConnectError({ host: ADDRESS, port: cg.dbPort, user: "db_any", password: token, database: "app", ssl: false });
  const plainRaw = await firstAnswer(ADDRESS, cg.dbPort);
  const tlsWrongToken = await pgConnectError({ host: ADDRESS, port: cg.dbPort, user: "db_any", password: "agt_wrong", database: "app", ssl: { ca: ca.pem } });
  const tlsPsql = await psql(url(ADDRESS, "verify-full"), "SELECT 1");
  const loopbackPlain = await pgConnectError({ host: "127.0.0.1", port: cg.dbPort, user: "db_any", password: token, database: "app", ssl: false });
  const output = cg.output().slice(mark);
  console.log(JSON.stringify({ plainPsql: plainPsql.stderr, plainPg, plainRaw, tlsWrongToken, tlsPsql: tlsPsql.stderr, loopbackPlain, tokenInOutput: output.includes(token) }));
} finally {
  await cg.stop();
}

import { test, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { startBroker } from "../test/support/databaseBroker.ts";
import { fe, RawPg } from "../test/support/pgRawClient.ts";

test("copy in rss", async () => {
  const b = await startBroker();
  await b.secret("c", { user: "scram" });
  await b.db.createDatabase("copyin");
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${b.cg.proc.pid}/status`, "utf8"))![1]) / 1024;
  const { client } = await RawPg.login(b.dbPort, { user: "c", database: "copyin" }, b.token, b.ca.pem);
  client.send(fe.query("COPY items (name, n) FROM STDIN"));
  await client.until((s) => s.type === "G");
  const line = "x".repeat(1000) + "\t1\n";
  const chunk = Buffer.from(fe.copyData(line.repeat(256)));
  let max = 0;
  const before = rss();
  const timer = setInterval(() => (max = Math.max(max, rss())), 50);
  for (let i = 0; i < 1200; i++) {
    if (!client.socket.write(chunk)) await new Promise((r) => client.socket.once("drain", r));
  }
  client.send(fe.copyDone());
  const done = await client.readies(1, 300000);
  clearInterval(timer);
  console.log("rss before", before.toFixed(0), "MB, max", max.toFixed(0), "MB", done.find((s) => s.type === "C"));
  await b.stop();
}, 400000);

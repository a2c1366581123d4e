// The metadata endpoints credgate answers are never dialled (docs/cloud-identities.md#placeholders): in a network
// namespace of its own (test/support/cloudMetadataScenario.ts, started with `unshare -n`), 169.254.169.254 exists
// on `lo` with a listener, metadata.google.internal resolves to it, and credgate is even told it may dial it
// (CREDGATE_EGRESS_ALLOW). An agent with cloud secrets gets credgate's answers in absolute-form and in plain CONNECT
// :80 tunnels, and the listener hears nothing; an agent with no cloud secret reaches it (the control).
import { expect, test } from "bun:test";
import { join } from "node:path";
import { run } from "../support/gateway.ts";

const SCENARIO = join(import.meta.dir, "../support/cloudMetadataScenario.ts");

test("answered by credgate, never dialled, even where egress to the metadata address is allowed", async () => {
  const setup = "ip link set lo up && ip addr add 169.254.169.254/32 dev lo";
  const r = await run(["unshare", "-n", "sh", "-c", `${setup} && exec "$0" "$1"`, process.execPath, SCENARIO], { env: { CREDGATE_TEST_ENGINE: "sqlite" }, timeoutMs: 90_000 });
  if (r.code !== 0) throw new Error(`scenario failed (${r.code}): ${r.stderr}\n${r.stdout}`);
  const { answers, heardByCloudAgent, heardAll } = JSON.parse(r.stdout.trim().split("\n").pop()!) as { answers: Record<string, string>; heardByCloudAgent: string[]; heardAll: string[] };
  for (const host of ["169.254.169.254", "metadata.google.internal"]) {
    for (const kind of ["absolute", "tunnel"]) {
      const a = answers[`${kind} gce ${host}`]!;
      expect(a).toMatch(/HTTP\/1\.1 200 /);
      expect(a.toLowerCase()).toContain("metadata-flavor: google");
      expect(a.endsWith("ns-project")).toBe(true);
    }
    expect(answers[`tunnel other path ${host}`]).toMatch(/HTTP\/1\.1 404 /);
  }
  for (const key of ["absolute mi", "tunnel mi"]) expect(answers[key]).toContain('"access_token":"credgate-managed-azure"');
  expect(heardByCloudAgent).toEqual([]);
  // The control: the listener is there, and an agent credgate does not answer for reaches it.
  expect(answers["control: no cloud secret"]).toContain("listener");
  expect(heardAll).toEqual([`GET /computeMetadata/v1/project/project-id HTTP/1.1`]);
}, 120_000);

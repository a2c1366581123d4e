// The passthrough stage (docs/gateway.md#tunnels): a CONNECT to a host listed in CREDGATE_PASSTHROUGH_HOSTS
// (host patterns) is marked for a raw pipe; every other is intercepted. It never answers a CONNECT itself and
// has nothing to do with requests.
import { expect, test } from "bun:test";
import { PASS } from "../../../src/gateway/stage.ts";
import { passthroughStage } from "../../../src/gateway/stages/passthrough.ts";
import { testTunnel } from "../../../src/gateway/testing.ts";

const stage = passthroughStage({ passthroughHosts: ["raw.example.test", "*.pinned.test"] });

test("listed hosts and wildcard matches are passed through; the rest intercepted; the CONNECT always goes on", () => {
  for (const [authority, raw] of [
    ["raw.example.test:443", true],
    ["RAW.example.test.:8443", true],
    ["a.pinned.test:443", true],
    ["pinned.test:443", false],
    ["other.example.test:443", false],
  ] as const) {
    const tunnel = testTunnel({ authority });
    expect(stage.connect!(tunnel)).toBe(PASS);
    expect(tunnel.passthrough).toBe(raw);
  }
  expect(stage.request).toBeUndefined();
});

test("no list: every tunnel is intercepted", () => {
  const tunnel = testTunnel({ authority: "raw.example.test:443" });
  expect(passthroughStage({ passthroughHosts: [] }).connect!(tunnel)).toBe(PASS);
  expect(tunnel.passthrough).toBe(false);
});

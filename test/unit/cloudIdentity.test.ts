// The cloud identities' pure rules (docs/cloud-identities.md): the Azure scope a host implies, the vendor-served
// wildcards, the service-account key check, and the bounded set of known tokens the leak guard watches.
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { azureScopeForHost, coversVendorSuffix, parseGcpKey } from "../../src/core/cloudIdentity.ts";
import { KnownTokens } from "../../src/core/knownTokens.ts";

describe("azureScopeForHost", () => {
  test.each([
    ["management.azure.com", "https://management.azure.com/.default"],
    ["acct.blob.core.windows.net", "https://storage.azure.com/.default"],
    ["acct.queue.core.windows.net", "https://storage.azure.com/.default"],
    ["acct.table.core.windows.net", "https://storage.azure.com/.default"],
    ["kv.vault.azure.net", "https://vault.azure.net/.default"],
    ["graph.microsoft.com", "https://graph.microsoft.com/.default"],
    ["res.openai.azure.com", "https://cognitiveservices.azure.com/.default"],
    ["res.cognitiveservices.azure.com", "https://cognitiveservices.azure.com/.default"],
    ["acct.file.core.windows.net", null],
    ["blob.core.windows.net.evil.example", null],
    ["evilmanagement.azure.com", null],
  ])("%s → %s", (host, scope) => {
    expect(azureScopeForHost(host)).toBe(scope);
  });
});

test("vendor-served wildcards: only *.googleapis.com and *.blob.core.windows.net", () => {
  expect(["*.googleapis.com", "*.GoogleApis.com.", "*.blob.core.windows.net"].map(coversVendorSuffix)).toEqual([true, true, true]);
  expect(["googleapis.com", "*.com", "*.github.io", "*.x.googleapis.com", "storage.googleapis.com"].map(coversVendorSuffix)).toEqual([false, false, false, false, false]);
});

test("parseGcpKey: the fields used, an https token_uri, an RSA key", () => {
  const pem = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const base = { type: "service_account", client_email: "a@b.iam.gserviceaccount.com", private_key: pem, private_key_id: "k", token_uri: "https://oauth2.googleapis.com/token", project_id: "p" };
  expect(parseGcpKey(JSON.stringify(base))).toEqual({ clientEmail: base.client_email, privateKey: pem, privateKeyId: "k", tokenUri: base.token_uri, projectId: "p" });
  expect(parseGcpKey(JSON.stringify({ ...base, token_uri: "http://oauth2.googleapis.com/token" }))).toBeNull();
  expect(parseGcpKey(JSON.stringify({ ...base, client_email: "no-at-sign" }))).toBeNull();
  expect(parseGcpKey("[]")).toBeNull();
});

test("KnownTokens: a new token changes the generation, a known one does not; the newest 64 are kept", () => {
  const known = new KnownTokens();
  known.add("t0", "gcp");
  const g = known.generation;
  known.add("t0", "gcp");
  expect(known.generation).toBe(g);
  for (let i = 1; i <= 70; i++) known.add(`t${i}`, i % 2 ? "azure" : "gcp");
  const kept = [...known.entries()].map(([t]) => t);
  expect(kept.length).toBe(64);
  expect(kept[0]).toBe("t7");
  expect(kept.at(-1)).toBe("t70");
});

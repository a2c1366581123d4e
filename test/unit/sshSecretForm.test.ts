// The dashboard's secret form for an SSH key (docs/ssh.md#the-ssh-secret): the fields it shows for the variant,
// the body it sends on create and edit (no path, the key as the value), and how the list describes the secret.
import { expect, test } from "bun:test";
// The dashboard UI is type-checked with its own (DOM) settings: loaded by a path the root check does not follow.
const FORM = "../../src/dashboard/ui/pages/secretForm.ts";
const { describeInjection, secretBody, secretFields } = await import(FORM);
type SecretRecord = Record<string, unknown>;
type Field = { name: string; value?: unknown; when?: (v: Record<string, unknown>) => boolean };

const KNOWN = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

test("create: the key is the value, the variant's fields make injectionConfig.ssh, no path", () => {
  const body = secretBody(
    { name: "deploy", type: "generic", valueSource: "inline", injection: "ssh", hostPattern: "github.com", pathPattern: "/x", sshKey: "-----BEGIN OPENSSH PRIVATE KEY-----\n…", sshUser: "", sshKnownHosts: KNOWN, sshCommands: "git", sshPush: "approve" },
    false,
  );
  expect(body).toEqual({
    name: "deploy",
    type: "generic",
    valueSource: "inline",
    value: "-----BEGIN OPENSSH PRIVATE KEY-----\n…",
    hostPattern: "github.com",
    injectionConfig: { ssh: { knownHosts: KNOWN, commands: "git", push: "approve" } },
  });
});

test("edit without a new key keeps the stored one and clears a path", () => {
  const body = secretBody({ name: "deploy", type: "generic", injection: "ssh", hostPattern: "github.com", sshKey: "", sshUser: "git", sshKnownHosts: KNOWN, sshCommands: "any", sshPush: "block" }, true);
  expect(body.value).toBeUndefined();
  expect(body.pathPattern).toBeNull();
  expect(body.injectionConfig).toEqual({ ssh: { user: "git", knownHosts: KNOWN, commands: "any", push: "block" } });
});

test("an existing SSH secret opens on its variant and is described by user, host, commands and pushes", () => {
  const s = {
    id: "00000000-0000-4000-8000-000000000000",
    name: "deploy",
    type: "generic",
    valueSource: "inline",
    opRef: null,
    hostPattern: "github.com",
    pathPattern: null,
    injectionConfig: { ssh: { user: "git", knownHosts: KNOWN, commands: "git", push: "approve" } },
    metadata: null,
    scope: "project",
    typeLabel: "Generic Secret",
    createdAt: "2026-01-01T00:00:00.000Z",
  } as unknown as SecretRecord;
  expect(describeInjection(s)).toBe("SSH git@github.com · git only · pushes approve");
  const fields: Field[] = secretFields({ existing: s, allowVault: false });
  expect(fields.find((f) => f.name === "injection")!.value).toBe("ssh");
  expect(fields.find((f) => f.name === "sshKnownHosts")!.value).toBe(KNOWN);
  const values = { type: "generic", injection: "ssh", valueSource: "inline" };
  expect(fields.find((f) => f.name === "pathPattern")!.when!(values)).toBe(false);
  expect(fields.find((f) => f.name === "value")!.when!(values)).toBe(false);
  expect(fields.find((f) => f.name === "sshKey")!.when!(values)).toBe(true);
});

// The pure SSH rules (docs/ssh.md#commands, docs/ssh.md#host-keys): which commands are git commands and what
// their repository is, known_hosts lines and which of them speak for a host, the host certificate's shape.
import { describe, expect, test } from "bun:test";
import { createHmac, randomBytes } from "node:crypto";
import { hostKeyAlgorithmsFor, knownHostMatches, parseGitCommand, parseKnownHosts, pinnedKeysFor, repositoryPath, sshConfigError } from "../../src/core/sshRules.ts";
import { SshCertificateAuthority } from "../../src/crypto/sshCertificate.ts";

const ED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

describe("git commands", () => {
  test.each([
    ["git-upload-pack 'acme/app.git'", "git-upload-pack", "acme/app.git"],
    ["git-receive-pack '/acme/app.git'", "git-receive-pack", "/acme/app.git"],
    ["git-upload-archive 'a b.git'", "git-upload-archive", "a b.git"],
    ["git-upload-pack 'it'\\''s.git'", "git-upload-pack", "it's.git"],
    ["git-upload-pack acme/app.git", "git-upload-pack", "acme/app.git"],
    ["git-upload-pack ~/app.git", "git-upload-pack", "~/app.git"],
  ])("%s → %s %s", (cmd, service, repository) => {
    expect(parseGitCommand(cmd)).toEqual({ service: service as never, repository });
  });

  test.each([
    "git-upload-pack",
    "git-upload-pack 'a.git' 'b.git'",
    "git-upload-pack 'a.git';id",
    "git-upload-pack $(id)",
    "git-upload-pack `id`",
    "git-upload-pack 'unterminated",
    "git upload-pack 'a.git'",
    "git-shell -c 'git-upload-pack a.git'",
    "id",
    "git-upload-pack ''",
    "git-upload-pack 'a\nb'",
    "git-upload-pack '--help'",
    "git-upload-archive --remote=x",
  ])("%s → not a git command", (cmd) => {
    expect(parseGitCommand(cmd)).toBeNull();
  });

  test("the policy path is the repository with a leading /", () => {
    expect(repositoryPath("acme/app.git")).toBe("/acme/app.git");
    expect(repositoryPath("/acme/app.git")).toBe("/acme/app.git");
  });
});

describe("known_hosts", () => {
  test("lines, comments and blank lines; markers and mismatched types are not host keys", () => {
    expect(parseKnownHosts(`# c\n\ngithub.com ${ED}\n`)!.map((k) => k.keyType)).toEqual(["ssh-ed25519"]);
    expect(parseKnownHosts(`@cert-authority * ${ED}`)).toBeNull();
    expect(parseKnownHosts(`github.com ssh-rsa ${ED.split(" ")[1]}`)).toBeNull();
    expect(parseKnownHosts("github.com ssh-ed25519 !!!")).toBeNull();
  });

  test.each([
    ["github.com", "github.com", true],
    ["GitHub.com", "github.com", true],
    ["github.com,gitlab.com", "gitlab.com", true],
    ["*.example.com", "git.example.com", true],
    ["*.example.com,!bad.example.com", "bad.example.com", false],
    ["[github.com]:22", "github.com", true],
    ["[github.com]:2222", "github.com", false],
    ["github.com", "evil-github.com", false],
    ["git?.test", "git1.test", true],
  ])("%s names %s: %s", (patterns, host, expected) => {
    expect(knownHostMatches(patterns, host)).toBe(expected);
  });

  test("a hashed name (ssh-keygen -H) matches its host only", () => {
    const salt = randomBytes(20);
    const hash = createHmac("sha1", salt).update("github.com").digest("base64");
    const hashed = `|1|${salt.toString("base64")}|${hash}`;
    expect(knownHostMatches(hashed, "github.com")).toBe(true);
    expect(knownHostMatches(hashed, "gitlab.com")).toBe(false);
  });

  test("only the keys pinned for the host count, and only their algorithms are offered", () => {
    const text = `github.com ${ED}\ngitlab.com ${ED}`;
    expect(pinnedKeysFor(text, "github.com")).toHaveLength(1);
    expect(pinnedKeysFor(text, "bitbucket.org")).toHaveLength(0);
    expect(hostKeyAlgorithmsFor(parseKnownHosts(`a ${ED}`)!)).toEqual(["ssh-ed25519"]);
  });

  test("a config without a host key → the contract's message", () => {
    expect(sshConfigError({})).toBe("knownHosts must hold at least one host key");
    expect(sshConfigError({ knownHosts: `github.com ${ED}` })).toBeNull();
  });
});

describe("host certificates", () => {
  test("an ed25519 host certificate for the name, signed by the CA, that ssh-keygen reads", async () => {
    const ca = SshCertificateAuthority.load(SshCertificateAuthority.generate());
    const cert = ca.hostCertificate("git.example.com");
    expect(ca.hostCertificate("git.example.com")).toBe(cert);
    const line = `ssh-ed25519-cert-v01@openssh.com ${cert.blob.toString("base64")}`;
    const { execFileSync } = await import("node:child_process");
    const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
    const dir = mkdtempSync("/tmp/credgate-cert-");
    try {
      writeFileSync(`${dir}/host-cert.pub`, `${line}\n`);
      const shown = execFileSync("ssh-keygen", ["-L", "-f", `${dir}/host-cert.pub`]).toString();
      expect(shown).toContain("Type: ssh-ed25519-cert-v01@openssh.com host certificate");
      expect(shown).toContain("git.example.com");
      expect(shown).toContain(`Signing CA: ED25519`);
      const caKey = ca.knownHostsLine().split(" ").slice(2, 4).join(" ");
      writeFileSync(`${dir}/ca.pub`, `${caKey}\n`);
      const fp = execFileSync("ssh-keygen", ["-l", "-f", `${dir}/ca.pub`]).toString().split(" ")[1]!;
      expect(shown).toContain(fp);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(ca.knownHostsLine()).toMatch(/^@cert-authority \* ssh-ed25519 [A-Za-z0-9+/=]+ credgate$/);
  });
});

describe("generated keys", () => {
  test("every generated ed25519 key reads back (ssh2's own generator lost a leading zero byte about once in 128)", async () => {
    const { generateEd25519, parseSshPrivateKey, publicKeyLine } = await import("../../src/crypto/sshKeys.ts");
    for (let i = 0; i < 400; i++) {
      const k = generateEd25519("c");
      expect(parseSshPrivateKey(k.privateKey)).not.toBeNull();
      expect(publicKeyLine(k.privateKey, "c")).toBe(k.publicKey);
    }
  });

  test("ssh-keygen reads a generated key and derives the same public key", async () => {
    const { generateEd25519 } = await import("../../src/crypto/sshKeys.ts");
    const { execFileSync } = await import("node:child_process");
    const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
    const dir = mkdtempSync("/tmp/credgate-key-");
    try {
      const k = generateEd25519("credgate-x");
      writeFileSync(`${dir}/k`, k.privateKey, { mode: 0o600 });
      expect(execFileSync("ssh-keygen", ["-y", "-f", `${dir}/k`]).toString().trim().split(" ").slice(0, 2)).toEqual(k.publicKey.split(" ").slice(0, 2));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

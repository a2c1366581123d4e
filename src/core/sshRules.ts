// Pure rules of the `ssh` secret variant (docs/ssh.md#the-ssh-secret): the shape of `injectionConfig.ssh`, its
// stored form, the pinned known_hosts lines and which of them speak for a host, and the git commands credgate
// relays (docs/ssh.md#commands): `git-upload-pack`, `git-receive-pack`, `git-upload-archive` with one repository.
import { createHmac } from "node:crypto";
import type { SshCommands, SshConfig, SshPush } from "./records/secrets.ts";

export const SSH_KEY_MESSAGE = "value must be an OpenSSH private key";
export const SSH_KNOWN_HOSTS_MESSAGE = "knownHosts must hold at least one host key";
export const SSH_PARTNER_MESSAGE = "SSH secrets belong to a project or an organization";
export const DEFAULT_SSH_USER = "git";

const FIELDS = ["user", "knownHosts", "commands", "push"] as const;
const COMMANDS: readonly SshCommands[] = ["git", "any"];
const PUSH: readonly SshPush[] = ["allow", "approve", "block"];
/** Host key types OpenSSH pins in known_hosts (certificates are pinned through @cert-authority, which we do not take). */
const KEY_TYPES = new Set(["ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa"]);
const MAX_KNOWN_HOSTS = 64 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const present = (v: unknown) => v !== undefined && v !== null;

/** One pinned host key: the host patterns it speaks for and the key's wire blob. */
export interface KnownHost {
  /** Comma-separated patterns as written (`host`, `[host]:port`, `*.x`, `!neg`, or a hashed `|1|salt|hash`). */
  patterns: string;
  keyType: string;
  /** The key as the server sends it in the key exchange (base64-decoded). */
  blob: Buffer;
}

/** The known_hosts lines of a secret; comments and blank lines skipped; null when a line is not a host key line. */
export function parseKnownHosts(text: string): KnownHost[] | null {
  const out: KnownHost[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const fields = line.split(/\s+/);
    // A marker (@cert-authority, @revoked) changes what the line means: not a pinned key.
    if (fields[0]!.startsWith("@") || fields.length < 3) return null;
    const [patterns, keyType, base64] = fields as [string, string, string];
    if (!KEY_TYPES.has(keyType) || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return null;
    const blob = Buffer.from(base64, "base64");
    // The blob starts with its own type name: a line whose two disagree is not a key.
    if (blob.length < 4 || blob.readUInt32BE(0) + 4 > blob.length || blob.subarray(4, 4 + blob.readUInt32BE(0)).toString("latin1") !== keyType) return null;
    out.push({ patterns, keyType, blob });
  }
  return out;
}

/** Whether one known_hosts pattern list names `host` (port 22; `[host]:22` too); a negated match excludes. */
export function knownHostMatches(patterns: string, host: string): boolean {
  const name = host.toLowerCase();
  if (patterns.startsWith("|1|")) {
    const [, , salt, hash] = patterns.split("|");
    if (!salt || !hash) return false;
    const mac = (n: string) => createHmac("sha1", Buffer.from(salt, "base64")).update(n).digest("base64");
    return mac(name) === hash || mac(`[${name}]:22`) === hash;
  }
  let matched = false;
  for (const p of patterns.toLowerCase().split(",")) {
    const negated = p.startsWith("!");
    const bare = (negated ? p.slice(1) : p).replace(/^\[(.*)\]:22$/, "$1");
    if (bare.startsWith("[")) continue;
    const re = new RegExp(`^${bare.replace(/[.+^${}()|\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`);
    if (re.test(name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

/** The pinned keys that speak for `host` (docs/ssh.md#host-keys): the names are matched against the CONNECT host. */
export function pinnedKeysFor(knownHosts: string, host: string): KnownHost[] {
  return (parseKnownHosts(knownHosts) ?? []).filter((k) => knownHostMatches(k.patterns, host));
}

/** The host key algorithms to offer for pinned keys of these types (an RSA key signs with SHA-2 first). */
export function hostKeyAlgorithmsFor(keys: readonly KnownHost[]): string[] {
  const out: string[] = [];
  for (const k of keys) {
    const algos = k.keyType === "ssh-rsa" ? ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"] : [k.keyType];
    for (const a of algos) if (!out.includes(a)) out.push(a);
  }
  return out;
}

/** The first failure of `injectionConfig.ssh`, fields in the order of the variant's table; null when valid. */
export function sshConfigError(raw: unknown): string | null {
  const at = (f: string) => `injectionConfig.ssh.${f}`;
  if (!isObject(raw)) return "injectionConfig.ssh must be an object";
  const unknown = Object.keys(raw).find((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined) return `injectionConfig.ssh has unknown field "${unknown}"`;
  if (present(raw.user)) {
    if (typeof raw.user !== "string") return `${at("user")} must be a string`;
    if (raw.user.length < 1 || raw.user.length > 255) return `${at("user")} must be 1-255 characters`;
    if (/[\s\u0000-\u001f\u007f@]/.test(raw.user)) return `${at("user")} must not contain spaces, @ or control characters`;
  }
  if (!present(raw.knownHosts)) return SSH_KNOWN_HOSTS_MESSAGE;
  if (typeof raw.knownHosts !== "string") return `${at("knownHosts")} must be a string`;
  if (raw.knownHosts.length > MAX_KNOWN_HOSTS) return `${at("knownHosts")} must be at most ${MAX_KNOWN_HOSTS} characters`;
  const keys = parseKnownHosts(raw.knownHosts);
  if (keys === null) return `${at("knownHosts")} must be known_hosts lines: <hosts> <key type> <base64 key>`;
  if (keys.length === 0) return SSH_KNOWN_HOSTS_MESSAGE;
  if (present(raw.commands) && !COMMANDS.includes(raw.commands as SshCommands)) return `${at("commands")} must be one of: ${COMMANDS.join(", ")}`;
  if (present(raw.push) && !PUSH.includes(raw.push as SshPush)) return `${at("push")} must be one of: ${PUSH.join(", ")}`;
  return null;
}

export interface StoredSshConfig {
  user: string;
  knownHosts: string;
  commands: SshCommands;
  push: SshPush;
}

/** The stored form of a valid config: user `git`, commands `git`, pushes allowed. */
export function normalizeSshConfig(c: SshConfig): StoredSshConfig {
  return { user: c.user ?? DEFAULT_SSH_USER, knownHosts: c.knownHosts.trim(), commands: c.commands ?? "git", push: c.push ?? "allow" };
}

export type GitService = "git-upload-pack" | "git-receive-pack" | "git-upload-archive";

/** A git command as git's ssh transport sends it: the service and its one repository argument, unquoted. */
export interface GitCommand {
  service: GitService;
  repository: string;
}

/**
 * Reads `git-upload-pack '/owner/repo.git'` (git quotes with single quotes, `'\''` for a quote inside); an
 * unquoted argument without shell characters is taken too. Anything else (a second argument, `;`, `$(…)`, an
 * option such as `--help`) → null.
 */
export function parseGitCommand(command: string): GitCommand | null {
  const m = /^(git-upload-pack|git-receive-pack|git-upload-archive) +(.+)$/.exec(command.trim());
  if (!m) return null;
  const arg = unquoteOne(m[2]!);
  // A leading `-` would be read as an option by the server's git, not as a repository.
  if (arg === null || arg === "" || arg.startsWith("-") || /[\u0000-\u001f\u007f]/.test(arg)) return null;
  return { service: m[1] as GitService, repository: arg };
}

/** One shell word made of single-quoted parts and `\x` escapes (git's sq_quote); null for anything else. */
function unquoteOne(word: string): string | null {
  let out = "";
  let i = 0;
  while (i < word.length) {
    const c = word[i]!;
    if (c === "'") {
      const end = word.indexOf("'", i + 1);
      if (end < 0) return null;
      out += word.slice(i + 1, end);
      i = end + 1;
    } else if (c === "\\" && i + 1 < word.length) {
      out += word[i + 1];
      i += 2;
    } else if (/[A-Za-z0-9_.\/~@:+,=-]/.test(c)) {
      out += c;
      i++;
    } else return null;
  }
  return out;
}

/** The policy path of a git command (docs/ssh.md#policy): the repository with a leading `/`. */
export function repositoryPath(repository: string): string {
  return repository.startsWith("/") ? repository : `/${repository}`;
}

/** The host without `:22`, any other port kept (logs and approvals). */
export function sshDisplayHost(host: string, port: number): string {
  const h = host.includes(":") ? `[${host}]` : host;
  return port === 22 ? host : `${h}:${port}`;
}

// `npm run docs:cite`: rewrites references to the old external specification — `CONTRACT §6.11`, a bare
// `(§5.2)`, `§1.2 step 5`, `§9 example 23`, ranges like `§6.9–6.10` — in src/, cli/, test/ and bench/ into
// citations of this repository's pages (`docs/budgets.md#metering`). Standards citations
// (`RFC 9110 §5.5`) are left alone. Idempotent: what it writes contains nothing it would rewrite. It prints
// every rewrite count and every reference it could not map (file:line), and exits 1 when there were some.
// `--check` only reports. test/unit/docsCitations.test.ts keeps the tree clean afterwards.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

export const ROOT = join(import.meta.dir, "..");
export const SCANNED = ["src", "cli", "test", "bench"];
const TEXT_FILE = /\.(ts|tsx|js|mjs|cjs|md|sh|css|html)$/;

/**
 * Files that must spell the old names to forbid them (their patterns are not references). Everything else
 * in the scanned folders is rewritten and checked.
 */
export const EXEMPT = new Set(["test/unit/readme.test.ts", "test/unit/docsCitations.test.ts"]);

/** A page and heading anchor, as `page#anchor` (or a page alone), relative to docs/. */
type Cite = string;

interface Section {
  /** Where the section is described. */
  cite: Cite;
  /**
   * A closer heading when the words around the reference (or a quoted sub-name after it) say which part of
   * the section is meant. First match wins; the words after the reference are tried before those before it.
   */
  refine?: [RegExp, Cite][];
  /** Quoted sub-names of the section that name a part of it (dropped from the text once mapped). */
  names?: string[];
}

/**
 * The old specification's sections, and where this repository describes each. Sections whose pages are
 * written by branches not merged yet (placeholders, HTTP/2, leak guard, notifications, audit, budgets of every
 * scope) point at the headings those pages are expected to get; the citations test reports them until then.
 */
export const SECTIONS: Record<string, Section> = {
  "0": { cite: "api#base-path-and-modes" },
  "0.1": { cite: "api#base-path-and-modes" },
  "0.2": { cite: "api#bodies-and-formats" },
  "0.3": { cite: "api#validation-messages" },
  "1": { cite: "api#how-a-request-is-authenticated" },
  "1.1": { cite: "api#credentials" },
  "1.2": { cite: "api#how-a-request-is-authenticated" },
  "1.3": { cite: "api#context" },
  "1.4": { cite: "api#roles" },
  "2": { cite: "api#error-shapes" },
  "2.1": { cite: "api#error-shapes" },
  "2.2": { cite: "api#error-shapes" },
  "2.3": { cite: "api#unknown-routes" },
  "2.4": { cite: "api#error-messages" },
  "3": { cite: "api#records" },
  "3.1": { cite: "api#agents-and-tokens" },
  "3.2": { cite: "injection#grants" },
  "3.3": { cite: "injection#secrets", refine: [[/injection variant/i, "injection#injection-variants"]] },
  "3.4": { cite: "policy#rules" },
  "3.5": { cite: "policy#approvals" },
  "3.6": {
    cite: "api#records",
    names: ["Spend budget", "Blocklist entry", "Request log", "Migration result", "Partner organization", "Partner member", "Last publish", "Publish result", "Connection", "Organization connection", "App item", "App configuration", "Permission definition", "Counts", "Health", "Credential stub", "Project", "Team member", "Provision"],
    refine: [
      [/Spend budget/, "budgets#partner-budgets"],
      [/Blocklist entry/, "policy#app-blocklists"],
      [/Migration result/, "api#migration"],
      [/Partner (organization|member)/, "api#partners"],
      [/(Last|Publish) (publish|result)/, "policy#draft-and-publish"],
      [/\bconnections?\b/i, "injection#app-connections"],
      [/Credential stub/, "api#agent-setup"],
      [/Team member|Provision|\bProject\b/, "api#projects-and-team"],
      [/Counts|Health/, "api#utility-endpoints"],
      [/\blogs?\b/i, "gateway#request-logs"],
    ],
  },
  "4": {
    cite: "api#states",
    refine: [
      [/\bTarget\b/, "policy#rules"],
      [/Permission definition/, "api#records"],
      [/connection|connected|revoked|expired/i, "injection#app-connections"],
      [/approval|holding process/i, "policy#approvals"],
      [/publish/i, "policy#draft-and-publish"],
    ],
  },
  "5": { cite: "api-reference" },
  "5.1": {
    cite: "api#agents-and-tokens",
    names: ["Grants", "Compilation"],
    refine: [
      [/Compilation/, "policy#managed-rules"],
      [/resources|sessionPolicy/, "injection#resource-limits"],
      [/effective/i, "injection#agent-modes"],
      [/(?<!without )grants?\b/i, "injection#grants"],
    ],
  },
  "5.2": { cite: "injection#secrets", refine: [[/host (pattern|check)/i, "injection#host-and-path-patterns"]] },
  "5.3": {
    cite: "policy#rules",
    refine: [
      [/publish/i, "policy#draft-and-publish"],
      [/managed/i, "policy#managed-rules"],
      [/effective-app-permissions/, "policy#evaluation"],
    ],
  },
  "5.4": { cite: "policy#reviewing-approvals" },
  "5.5": { cite: "api#users-and-keys" },
  "5.6": { cite: "api#projects-and-team" },
  "5.7": { cite: "api#projects-and-team" },
  "5.8": {
    cite: "injection#app-connections",
    names: ["OAuth", "Blocklist", "client credentials resolve: enabled project config → enabled organization config → env"],
    refine: [[/blocklist/i, "policy#app-blocklists"]],
  },
  "5.9": { cite: "injection#app-connections" },
  "5.10": { cite: "api#utility-endpoints", refine: [[/\blogs?\b/i, "gateway#request-logs"]] },
  "5.11": { cite: "api#agent-setup" },
  "5.12": { cite: "api#migration" },
  "5.13": { cite: "api#organization-level-routes", refine: [[/connection/i, "injection#app-connections"]] },
  "5.14": { cite: "api#partners", refine: [[/budget/i, "budgets#partner-budgets"]] },
  "5.15": { cite: "api#partners" },
  "5.16": { cite: "api#accounts-and-sessions" },
  "5.17": { cite: "budgets#budgets-for-every-scope" },
  "5.18": { cite: "policy#notifications" },
  "5.19": { cite: "operations#audit-log" },
  "6": { cite: "gateway#order-of-checks" },
  "6.1": { cite: "gateway#listener", refine: [[/shut ?down|drain|SIGTERM/i, "gateway#shutdown"]] },
  "6.2": { cite: "gateway#proxy-authentication" },
  "6.3": { cite: "gateway#tunnels", refine: [[/request.?target/i, "gateway#request-targets"]] },
  "6.4": { cite: "gateway#order-of-checks", refine: [[/default interception|token refresh|refresh_token/i, "gateway#token-refresh-interception"]] },
  "6.5": { cite: "injection#host-and-path-patterns" },
  "6.6": { cite: "injection#precedence", refine: [[/candidate/i, "injection#candidates"]] },
  "6.7": { cite: "injection#injection-variants", names: ["External vault"], refine: [[/external vault/i, "injection#external-vault"]] },
  "6.8": {
    cite: "injection#app-connections",
    names: ["a connection applies"],
    refine: [
      [/resources?( guard)?\b|repositor|folder/i, "injection#resource-limits"],
      [/winning|x-credgate-connection|several connections|multiple/i, "injection#winning-connection"],
    ],
  },
  "6.9": { cite: "policy#evaluation" },
  "6.10": { cite: "policy#rate-limits" },
  "6.11": {
    cite: "budgets#metering",
    names: ["Metered endpoints"],
    refine: [
      [/usage/i, "budgets#usage"],
      [/pric/i, "budgets#pricing"],
      [/admission|admit|reserv/i, "budgets#admission"],
      [/budget(?! stage)/i, "budgets#partner-budgets"],
    ],
  },
  "6.12": { cite: "guards#claim-required" },
  "6.13": { cite: "policy#approvals" },
  "6.14": {
    cite: "gateway#forwarding",
    refine: [
      [/guidance/i, "gateway#guidance-rewrite"],
      [/websocket/i, "gateway#websocket"],
    ],
  },
  "6.15": { cite: "agent-errors#summary" },
  "6.16": { cite: "gateway#request-logs" },
  "6.17": {
    cite: "guards#egress-guard",
    refine: [
      [/echo/i, "guards#echo-guard"],
      [/cleartext|plain ?text|plain HTTP/i, "guards#cleartext-rule"],
    ],
  },
  "6.18": { cite: "operations#tls", refine: [[/HTTPS proxy|proxy itself|TLS inside TLS/i, "gateway#listener"]] },
  "6.19": { cite: "injection#placeholders" },
  "6.20": { cite: "injection#signed-and-minted-credentials" },
  "6.21": { cite: "gateway#http2-and-grpc" },
  "6.22": { cite: "guards#credential-leak-guard" },
  "6.23": { cite: "budgets#budgets-for-every-scope" },
  "7": {
    cite: "configuration",
    refine: [
      [/rotate-master-key|master key rotation/i, "operations#rotating-the-master-key"],
      [/doctor/i, "operations#doctor"],
      [/request.?id/i, "operations#request-ids"],
      [/metrics/i, "operations#metrics"],
      [/openapi|describes itself/i, "api-reference"],
      [/AES|encryption at rest|sealed/i, "operations#encryption-at-rest"],
      [/bootstrap|first start/i, "configuration#first-start"],
      [/credgate run|`run`|agent onto the gateway/i, "configuration#credgate-run"],
      [/gateway-workers|gateway workers/i, "configuration#server-settings"],
      [/CLI|partner create|migrate|appliance/i, "configuration#commands"],
      [/postgres|instances/i, "operations#several-instances-on-postgresql"],
      [/operat/i, "operations"],
      [/migration/i, "configuration#commands"],
    ],
  },
  "8": { cite: "README" },
  "9": { cite: "README" },
};

/** The old document's "deliberate differences" list, by item. */
const DIFFERENCES: Record<number, Cite> = {
  1: "operations#encryption-at-rest",
  2: "gateway#proxy-authentication",
  3: "injection#agent-modes",
  13: "injection#external-vault",
  16: "gateway#forwarding",
  17: "gateway#forwarding",
  20: "policy#rate-limits",
  22: "operations#several-instances-on-postgresql",
};

/** The old document's acceptance examples, by number: the section that describes what each checks. */
const EXAMPLES: [from: number, to: number, cite: Cite][] = [
  [1, 5, "api#how-a-request-is-authenticated"],
  [6, 8, "api#agents-and-tokens"],
  [9, 9, "gateway#proxy-authentication"],
  [10, 12, "injection#grants"],
  [13, 18, "injection#secrets"],
  [19, 21, "policy#rules"],
  [22, 22, "gateway#proxy-authentication"],
  [23, 26, "injection#injection-variants"],
  [27, 27, "injection#host-and-path-patterns"],
  [28, 28, "injection#precedence"],
  [29, 29, "gateway#guidance-rewrite"],
  [30, 31, "policy#evaluation"],
  [32, 32, "policy#rate-limits"],
  [33, 33, "policy#approvals"],
  [34, 35, "policy#reviewing-approvals"],
  [36, 36, "budgets#admission"],
  [37, 37, "budgets#pricing"],
  [38, 38, "budgets#partner-budgets"],
  [39, 39, "guards#claim-required"],
  [40, 40, "api#migration"],
];

/** The agent-facing error codes, each with its own heading in agent-errors.md. */
const ERROR_CODES = [
  "proxy_authentication_required", "bad_request", "egress_denied", "connection_not_found", "multiple_connections", "multiple_providers",
  "blocked_by_policy", "blocked_by_default_policy", "rate_limited", "resource_access_denied", "credential_unavailable", "insecure_transport",
  "claim_required", "budget_exceeded", "manual_approval_denied", "gateway_restarting", "approval_store_unavailable", "upstream_unreachable",
  "upstream_timeout", "bad_gateway", "access_restricted", "app_not_connected", "credential_not_found",
];

const docPath = (cite: Cite): string => {
  const [page, anchor] = cite.split("#");
  return `docs/${page}.md${anchor ? `#${anchor}` : ""}`;
};

const SECTION = String.raw`\d+(?:\.\d+)?`;
/**
 * One reference: optional `CONTRACT `, `§`, a section or a range (`6.9–6.10`, `1-§2`), then what may qualify
 * it: `step(s) 1, 2`, `example(s) 9 and 22`, `examples 1-5`, `37/36`, `item 13`, and quoted sub-names.
 */
export const REFERENCE = new RegExp(
  String.raw`(?<!RFC \d+ )(?:CONTRACT )?§(${SECTION})(?:\s*[–-]\s*§?(${SECTION}))?` +
    String.raw`(?<qual>\s+(?:steps?|examples?|items?)\s+\d+(?:\s*(?:[–,/-]|and)\s*\d+)*|\s+\d+(?:\/\d+)+)?` +
    String.raw`(?<quoted>\s+"[^"\n]{1,90}"(?:,\s*"[^"\n]{1,90}")*)?`,
  "g",
);

function sectionsOf(from: string, to: string | undefined): string[] {
  if (to === undefined) return [from];
  const [a, b] = [from.split("."), to.split(".")];
  if (a.length === 2 && b.length === 2 && a[0] === b[0]) {
    const out: string[] = [];
    for (let m = Number(a[1]); m <= Number(b[1]); m++) out.push(`${a[0]}.${m}`);
    return out;
  }
  if (a.length === 1 && b.length === 1) {
    const out: string[] = [];
    for (let m = Number(a[0]); m <= Number(b[0]); m++) out.push(String(m));
    return out;
  }
  return [from, to];
}

function numbersOf(qual: string): number[] {
  const out: number[] = [];
  const text = qual.replace(/^\s*(?:steps?|examples?|items?)\s+/, "");
  for (const part of text.split(/\s*(?:,|\/|and)\s*/)) {
    const range = /^(\d+)\s*[–-]\s*(\d+)$/.exec(part.trim());
    if (range) for (let n = Number(range[1]); n <= Number(range[2]); n++) out.push(n);
    else if (/^\d+$/.test(part.trim())) out.push(Number(part.trim()));
  }
  return out;
}

export interface Unmapped {
  file: string;
  line: number;
  text: string;
}

interface Mapping {
  cites: Cite[];
  /** Quoted sub-names that were used to choose the heading (removed from the text). */
  dropQuoted: boolean;
}

/** Where one reference points, from its section(s), its qualifiers and the words around it. */
function mapReference(sections: string[], qual: string | undefined, quoted: string | undefined, before: string, after: string): Mapping | null {
  const cites: Cite[] = [];
  let dropQuoted = false;
  const quotedNames = quoted ? [...quoted.matchAll(/"([^"\n]+)"/g)].map((m) => m[1]!) : [];
  for (const key of sections) {
    const section = SECTIONS[key];
    if (!section) return null;
    if (key === "9" && qual) {
      for (const n of numbersOf(qual)) {
        const hit = EXAMPLES.find(([a, b]) => n >= a && n <= b);
        if (!hit) return null;
        cites.push(hit[2]);
      }
      continue;
    }
    if (key === "8" && qual) {
      for (const n of numbersOf(qual)) {
        if (!DIFFERENCES[n]) return null;
        cites.push(DIFFERENCES[n]!);
      }
      continue;
    }
    if (key === "6.15") {
      const code = ERROR_CODES.find((c) => new RegExp(`\\b${c}\\b`).test(`${quotedNames.join(" ")} ${after}`)) ?? ERROR_CODES.find((c) => new RegExp(`\\b${c}\\b`).test(before));
      cites.push(code ? `agent-errors#${code}` : section.cite);
      continue;
    }
    const known = quotedNames.length > 0 && quotedNames.every((q) => section.names?.includes(q));
    if (known) dropQuoted = true;
    const nearText = `${known ? quotedNames.join(" ") : ""} ${after}`;
    const refined = section.refine?.find(([re]) => re.test(nearText)) ?? section.refine?.find(([re]) => re.test(before));
    cites.push(refined ? refined[1] : section.cite);
  }
  return { cites: [...new Set(cites)], dropQuoted };
}

/** A line's text without its comment markers. */
const bare = (line: string) => line.replace(/^\s*(?:\/\/+|\/?\*+\/?|#+)\s*/, "");

/**
 * The words after a reference that qualify it: up to the next delimiter or reference. A reference that ends
 * its line (the comment wraps) is qualified by the start of the next line.
 */
function clauseAfter(line: string, end: number, next: string): string {
  const take = (text: string) => {
    const stop = text.search(/[,;)§:]|\s[—–]\s/);
    return stop === -1 ? text : text.slice(0, stop);
  };
  const rest = line.slice(end);
  return rest.trim() === "" ? take(bare(next)) : take(rest);
}

/**
 * What the comment around a reference is about: the text before it on its line (and the end of the line
 * before, when the comment wraps), other references taken out.
 */
function clauseBefore(line: string, start: number, previous: string): string {
  const head = line.slice(0, start);
  // A parenthesis closed before the reference ends what an earlier reference was about.
  const closed = head.lastIndexOf(")");
  const text = closed === -1 ? `${bare(previous).slice(-60)} ${head}` : head.slice(closed + 1);
  return text.slice(-120).replace(/(?:CONTRACT )?§\d+(?:\.\d+)?/g, "");
}

/** Words of a citation's heading (`docs/x.md#rate-limits` → rate, limit). */
function anchorWords(cite: Cite): string[] {
  const anchor = cite.split("#")[1] ?? "";
  return anchor.split(/[-_]/).filter(Boolean).map((w) => w.replace(/s$/, ""));
}

/**
 * Words right after a citation that only repeat its heading (`docs/policy.md#rate-limits rate limits`) are
 * dropped; anything that says more is kept.
 */
function withoutEcho(text: string, cites: Cite[]): string {
  const m = /^(\s+)([`\w][\w`' -]{0,40}?)(?=$|[,;.)—:])/.exec(text);
  if (!m) return text;
  const words = m[2]!.replace(/`/g, "").trim().toLowerCase().split(/[\s_-]+/).map((w) => w.replace(/s$/, ""));
  const heading = new Set(cites.flatMap(anchorWords));
  if (words.length === 0 || words.length > 3 || !words.every((w) => heading.has(w))) return text;
  return text.slice(m[0].length);
}

/** Citations repeated in one list (`docs/a.md#x, docs/a.md#x; docs/a.md#x`) are given once. */
function dedupeLists(line: string): string {
  return line.replace(/docs\/[\w-]+\.md(?:#[\w-]+)?(?:[,;] docs\/[\w-]+\.md(?:#[\w-]+)?)+/g, (list) => {
    const seen = new Set<string>();
    let out = "";
    for (const m of list.matchAll(/([,;] )?(docs\/[\w-]+\.md(?:#[\w-]+)?)/g)) {
      if (seen.has(m[2]!)) continue;
      seen.add(m[2]!);
      out += (out === "" ? "" : (m[1] ?? ", ")) + m[2];
    }
    return out;
  });
}

/** Rewrites the references of one line; unmapped ones are left as they are and reported. */
export function rewriteLine(line: string, unmapped: (text: string) => void, previous = "", next = ""): { line: string; count: number } {
  let count = 0;
  let out = "";
  let at = 0;
  for (const m of line.matchAll(REFERENCE)) {
    const start = m.index!;
    const end = start + m[0].length;
    const groups = m.groups as { qual?: string; quoted?: string };
    const mapping = mapReference(sectionsOf(m[1]!, m[2]), groups.qual, groups.quoted, clauseBefore(line, start, previous), clauseAfter(line, end, next));
    out += line.slice(at, start);
    at = end;
    if (!mapping) {
      unmapped(m[0].trim());
      out += m[0];
      continue;
    }
    count++;
    out += mapping.cites.map(docPath).join(", ");
    if (groups.quoted && !mapping.dropQuoted) out += groups.quoted;
    else {
      // The words after the reference: kept, unless they only repeat the heading it now names.
      const rest = withoutEcho(line.slice(end), mapping.cites);
      at = line.length - rest.length;
    }
  }
  out += line.slice(at);
  // The pipeline's old step numbers said where a stage sat in the external list: its name says it now.
  return { line: dedupeLists(out).replace(/,\s*pipeline step \d+/g, ""), count };
}

function walk(dir: string, out: string[]): void {
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules" || entry.startsWith(".")) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (TEXT_FILE.test(entry)) out.push(path);
  }
}

export function scannedFiles(root = ROOT): string[] {
  const files: string[] = [];
  for (const dir of SCANNED) walk(join(root, dir), files);
  return files.filter((f) => !EXEMPT.has(relative(root, f)));
}

export interface Report {
  files: number;
  rewrites: number;
  unmapped: Unmapped[];
}

/** Rewrites every scanned file (or only counts, with `write` false). */
export function citeDocs(root = ROOT, write = true): Report {
  const report: Report = { files: 0, rewrites: 0, unmapped: [] };
  for (const file of scannedFiles(root)) {
    const rel = relative(root, file);
    const source = readFileSync(file, "utf8");
    let changed = 0;
    const original = source.split("\n");
    const lines = original.map((line, i) => {
      const { line: out, count } = rewriteLine(line, (text) => report.unmapped.push({ file: rel, line: i + 1, text }), original[i - 1] ?? "", original[i + 1] ?? "");
      changed += count;
      return out;
    });
    const text = lines.join("\n");
    if (changed === 0) continue;
    report.files++;
    report.rewrites += changed;
    if (write && text !== source) writeFileSync(file, text);
  }
  return report;
}

if (import.meta.main) {
  const check = process.argv.includes("--check");
  const report = citeDocs(ROOT, !check);
  const verb = check ? "would rewrite" : "rewrote";
  process.stdout.write(`${verb} ${report.rewrites} references in ${report.files} files\n`);
  for (const u of report.unmapped) process.stdout.write(`unmapped: ${u.file}:${u.line}: ${u.text}\n`);
  if (report.unmapped.length > 0) {
    process.stdout.write(`${report.unmapped.length} references could not be mapped: add their sections to SECTIONS in scripts/cite-docs.ts\n`);
    process.exit(1);
  }
}

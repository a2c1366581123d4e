// The credential leak guard (docs/guards.md#credential-leak-guard): the gateway knows every credential value an
// agent could use (its project's, organization's and partner secrets, its connections' tokens and keys); a
// request that carries one of them — raw, base64, percent-encoded or JSON-escaped — to a host none of the
// value's holders match is refused with 403 credential_leak_blocked before it is sent. The target and header
// values are scanned here, before any injection (credgate's own are not findings); the body is scanned while
// it streams — decoded as well when it is gzip, deflate, br or zstd (decodedScan.ts), refused with 415 when it
// is in a coding credgate cannot read — and an h2 agent's trailers when it has ended. A value found there errors
// the body before its chunk is written: the forward stage aborts the upstream connection and answers the 403
// (`rq.refusal`) unless the upstream had answered already. One needle set per agent view, compiled on first use;
// a project with no value of 12 characters or more costs one lookup.
import { hostRuleFor } from "../../apps/match.ts";
import { NeedleSet } from "../../core/needles.ts";
import { NeedleStream, replaceInString, type NeedleHandler } from "../../core/needleStream.ts";
import { REDACTED } from "../../core/echoRedaction.ts";
import { LEAK_MIN_LENGTH, leakForms } from "../../core/valueForms.ts";
import { bodyCoding, decodedScan } from "../decodedScan.ts";
import { credentialLeakBlocked, unsupportedContentEncoding } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import { scannedBody } from "../scannedBody.ts";
import type { AgentCredentials } from "../snapshot.ts";
import type { KnownTokens, TokenCloud } from "../../core/knownTokens.ts";
import type { KnownValues } from "../../core/knownValues.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

/** Where a watched value belongs: a holder matches the request's host (and path, for an app's host rules). */
type Holder = (host: string, path: string) => boolean;

interface Watched {
  name: string;
  holders: Holder[];
}

/** The watched values of one agent view: one needle set over all their forms. */
export class LeakWatch {
  constructor(
    readonly set: NeedleSet,
    /** Per needle index, the value it is a form of. */
    readonly owners: readonly Watched[],
  ) {}

  /** The value that needle `index` shows, when it is not for this host; null when it may go there. */
  misplaced(index: number, host: string, path: string): Watched | null {
    const w = this.owners[index]!;
    for (const h of w.holders) if (h(host, path)) return null;
    return w;
  }
}

const NO_HTTP_HOST: Holder = () => false;

interface Kept {
  watch: LeakWatch | null;
  generation: number;
  /** References of vault and store secrets whose values this process has not read: null when none. */
  missing: string[] | null;
}

const watches = new WeakMap<AgentCredentials, Kept>();

/**
 * The agent view's watch, compiled once per view (a snapshot rebuild makes a new view) and again when a cloud
 * token was minted or a vault or store value read since (`minted`, `fetched`: two integers added per request;
 * both only grow, so the sum changes when either does).
 */
export function leakWatchOf(creds: AgentCredentials, minted: KnownTokens | null = null, fetched: KnownValues | null = null): LeakWatch | null {
  return keptWatch(creds, minted, fetched).watch;
}

function keptWatch(creds: AgentCredentials, minted: KnownTokens | null, fetched: KnownValues | null): Kept {
  const generation = (minted?.generation ?? 0) + (fetched?.generation ?? 0);
  let kept = watches.get(creds);
  // A caller without them (the database broker) takes the watch as it is, minted tokens and all.
  if (kept === undefined || ((minted !== null || fetched !== null) && kept.generation !== generation)) {
    const missing: string[] = [];
    kept = { watch: compileWatch(creds, minted, fetched, missing), generation, missing: missing.length === 0 ? null : missing };
    watches.set(creds, kept);
  }
  return kept;
}

/**
 * The watch, complete: a vault or store value another gateway process read (so this one never did) is read here
 * first — once per reference and process, through the instance's shared cache — so that the agent cannot send a
 * value to another host through the process that does not know it. Synchronous once every value is known.
 */
export function completeLeakWatch(creds: AgentCredentials, minted: KnownTokens | null, fetched: KnownValues | null): LeakWatch | null | Promise<LeakWatch | null> {
  const kept = keptWatch(creds, minted, fetched);
  if (kept.missing === null || fetched === null) return kept.watch;
  const reading = fetched.want(kept.missing);
  return reading === null ? kept.watch : reading.then(() => keptWatch(creds, minted, fetched).watch);
}

/** A Google key's PEM private key, watched on its own too (a JSON key is rarely sent whole). */
function gcpPrivateKey(value: string): string | null {
  try {
    const key = JSON.parse(value);
    return typeof key?.private_key === "string" ? key.private_key : null;
  } catch {
    return null;
  }
}

function compileWatch(creds: AgentCredentials, minted: KnownTokens | null, fetched: KnownValues | null, missing: string[]): LeakWatch | null {
  const byValue = new Map<string, Watched>();
  const hold = (value: string, name: string, holder: Holder) => {
    if (value.length < LEAK_MIN_LENGTH) return;
    const w = byValue.get(value);
    if (w) w.holders.push(holder);
    else byValue.set(value, { name, holders: [holder] });
  };
  const seen = new Set<string>();
  for (const s of [...creds.visible, ...creds.injectable]) {
    // A value kept in a vault or a store is watched once this process has read it (docs/injection.md#secret-stores).
    const value = s.value ?? (s.valueRef !== null ? (fetched?.get(s.valueRef) ?? null) : null);
    // A vault-db:// lease is not a value of the resolver (the broker's lease hook owns it).
    if (value === null && s.valueRef !== null && fetched !== null && !s.valueRef.startsWith("vault-db://") && !missing.includes(s.valueRef)) missing.push(s.valueRef);
    if (seen.has(s.id) || value === null) continue;
    seen.add(s.id);
    // A database password belongs to the database listener only: no HTTP host may receive it (docs/databases.md#the-leak-guard).
    // An SSH key likewise belongs to the SSH interception only (docs/ssh.md#the-ssh-secret).
    hold(value, s.name, s.injection?.database !== undefined || s.injection?.ssh !== undefined ? NO_HTTP_HOST : (host) => s.hostMatch(host));
    const pem = s.injection?.gcpServiceAccount !== undefined ? gcpPrivateKey(value) : null;
    if (pem !== null) hold(pem, s.name, (host) => s.hostMatch(host));
  }
  // Tokens minted for the cloud identities (docs/cloud-identities.md#minting) belong to the hosts of the agent's
  // secrets of that cloud.
  if (minted !== null) {
    const all = [...creds.visible, ...creds.injectable];
    const holdersOf = (cloud: TokenCloud) =>
      all.filter((s) => (cloud === "gcp" ? s.injection?.gcpServiceAccount : s.injection?.azureClientSecret) !== undefined);
    const byCloud = { gcp: holdersOf("gcp"), azure: holdersOf("azure") };
    for (const [token, cloud] of minted.entries()) {
      const holders = byCloud[cloud];
      if (holders.length === 0) continue;
      hold(token, holders[0]!.name, (host) => holders.some((s) => s.hostMatch(host)));
    }
  }
  for (const c of creds.visibleConnections) {
    const cred = c.credential;
    if (cred === null) continue;
    const name = c.label ?? c.displayName;
    const holder: Holder = (host, path) => hostRuleFor(c.app, host, path) !== null;
    if (cred.kind === "oauth") hold(cred.accessToken, name, holder);
    else for (const field in cred.fields) hold(cred.fields[field]!, name, holder);
  }
  if (byValue.size === 0) return null;
  const needles: string[] = [];
  const owners: Watched[] = [];
  const taken = new Set<string>();
  for (const [value, w] of byValue) {
    for (const form of leakForms(value)) {
      if (taken.has(form)) continue;
      taken.add(form);
      needles.push(form);
      owners.push(w);
    }
  }
  return new LeakWatch(new NeedleSet(needles), owners);
}

/** The 403, logged as blocked. */
export function leakAnswer(rq: ProxyRequest): RequestVerdict {
  return answer("blocked", credentialLeakBlocked(rq.host, rq.leak!.secretName));
}

/** The error a body scan throws when it meets a misplaced value (the stream errors with it). */
class CredentialLeak extends Error {}

function found(rq: ProxyRequest, watch: LeakWatch, w: Watched): void {
  const redact = (i: number): string | null => (watch.owners[i] === w ? REDACTED : null);
  rq.leak = { secretName: w.name, loggedPath: replaceInString(rq.path, watch.set, redact) };
}

/** A body scan: each needle found is checked against the request's host; a misplaced one stops the body. */
class BodyScan implements NeedleHandler {
  constructor(
    private readonly rq: ProxyRequest,
    private readonly watch: LeakWatch,
  ) {}

  replacement(index: number): null {
    const w = this.watch.misplaced(index, this.rq.host, this.rq.path);
    if (w === null) return null;
    found(this.rq, this.watch, w);
    this.rq.refusal = leakAnswer(this.rq);
    throw new CredentialLeak("credential leak blocked");
  }
}

/** A scan of the agent's bytes (a body, WebSocket messages) that throws at the first misplaced value. */
export function leakScan(rq: ProxyRequest, watch: LeakWatch): NeedleStream {
  return new NeedleStream(watch.set, new BodyScan(rq, watch));
}

/** An h2 agent's trailers, known once its body has ended: scanned like header values. */
function scanTrailers(rq: ProxyRequest, watch: LeakWatch): void {
  const trailers = rq.agentTrailers;
  if (trailers === null) return;
  for (const [, value] of trailers) {
    const w = scanString(value, watch, rq.host, rq.path);
    if (w === null) continue;
    found(rq, watch, w);
    rq.refusal = leakAnswer(rq);
    throw new CredentialLeak("credential leak blocked");
  }
}

/** The first misplaced value in a string of byte-valued characters (target, header value), or null. */
function scanString(text: string, watch: LeakWatch, host: string, path: string): Watched | null {
  const set = watch.set;
  let at = 0;
  for (;;) {
    const start = set.findInString(text, at);
    if (start < 0) return null;
    const w = watch.misplaced(set.lastNeedle, host, path);
    if (w !== null) return w;
    at = start + set.needles[set.lastNeedle]!.length;
  }
}

export interface LeakGuardDeps {
  /** CREDGATE_LEAK_GUARD is not `off`. */
  enabled: boolean;
  /** The cloud tokens this process has used, watched too. */
  minted?: KnownTokens | null;
  /** The values this process has read from vaults and secret stores (services.stores.known), watched too. */
  fetched?: KnownValues | null;
}

export function leakGuardStage({ enabled, minted = null, fetched = null }: LeakGuardDeps): Stage {
  return {
    name: "leak-guard",
    reads: ["agent"],
    provides: ["leak"],
    request(rq) {
      if (!enabled) return PASS;
      const watch = completeLeakWatch(rq.credentials, minted, fetched);
      return watch instanceof Promise ? watch.then((w) => guard(rq, w)) : guard(rq, watch);
    },
  };
}

function guard(rq: ProxyRequest, watch: LeakWatch | null): RequestVerdict {
  if (watch === null) return PASS;
  let w = scanString(rq.target, watch, rq.host, rq.path);
  if (w === null) {
    for (const [, value] of rq.headers) {
      w = scanString(value, watch, rq.host, rq.path);
      if (w !== null) break;
    }
  }
  if (w !== null) {
    found(rq, watch, w);
    return leakAnswer(rq);
  }
  if (rq.body === null) return PASS;
  const coding = bodyCoding(rq.headers.get("content-encoding"));
  if (coding.kind === "unreadable") return answer("blocked", unsupportedContentEncoding(coding.coding));
  // An h2 agent's trailers come after the body (HTTP/1.1 ones are dropped: never forwarded).
  const atEnd = () => scanTrailers(rq, watch);
  if (coding.kind === "plain") rq.body = scannedBody(rq.body, leakScan(rq, watch), atEnd);
  else {
    const refuse = () => (rq.refusal = answer("blocked", unsupportedContentEncoding(coding.coding)));
    rq.body = decodedScan(rq.body, coding.coding, leakScan(rq, watch), leakScan(rq, watch), atEnd, refuse);
  }
  return PASS;
}

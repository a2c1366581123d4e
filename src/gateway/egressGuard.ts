// The egress guard (docs/guards.md#egress-guard): the address the gateway will dial is resolved here, judged, and then
// dialled exactly (no second lookup, so DNS rebinding cannot swap it). Refused: what core/addressRules.ts refuses for
// the mode and the operator's allow/deny lists, and credgate's own API and gateway listeners. A pinned target
// (CREDGATE_RESOLVE / CREDGATE_CONNECT_TO) is the operator's own choice: trusted in self-hosted mode or when its
// address is explicitly allowed. Names resolve through the instance's DNS cache (docs/operations.md#dns); a verdict
// is kept exactly as long as the answer it judged, so the address dialled is always the one that was judged.
import { networkInterfaces } from "node:os";
import type { Config } from "../runtime/config.ts";
import { egressAllowed, explicitlyAllowed, isLoopbackOrUnspecified, parseAddress, type Address, type EgressRules } from "../core/addressRules.ts";
import type { Fresh } from "../core/sharedCache.ts";
import type { DialTarget, Outbound } from "../services/outbound.ts";
import type { DnsAnswer } from "../services/dns.ts";

export type EgressVerdict =
  | { kind: "dial"; target: DialTarget }
  | { kind: "denied"; address: string; reason: string }
  /** The name did not resolve: nothing will be dialled. */
  | { kind: "unresolved"; reason: string };

/** A verdict and the wall-clock time it stops holding (Infinity for addresses: they depend on the configuration only). */
interface Kept {
  verdict: EgressVerdict;
  until: number;
}

const KEPT_MAX = 10_000;

export class EgressGuard {
  readonly #rules: EgressRules;
  readonly #ownPorts: Set<number>;
  readonly #localAddresses: Set<string>;
  /** Verdicts by host then port (no key string made per request). */
  readonly #kept = new Map<string, Map<number, Kept>>();
  #keptCount = 0;

  constructor(
    private readonly config: Pick<Config, "mode" | "egressAllow" | "egressDeny" | "port" | "gatewayPort"> & Partial<Pick<Config, "dbPort">>,
    private readonly outbound: Outbound,
  ) {
    this.#rules = { mode: config.mode, allow: config.egressAllow, deny: config.egressDeny };
    // The database listener too: a database secret pointed at credgate's own listener would loop.
    this.#ownPorts = new Set([config.port, config.gatewayPort, ...(config.dbPort ? [config.dbPort] : [])]);
    this.#localAddresses = new Set(
      Object.values(networkInterfaces())
        .flatMap((list) => list ?? [])
        .map((a) => parseAddress(a.address)?.text)
        .filter((t): t is string => t !== undefined),
    );
  }

  /**
   * Synchronous when the verdict is known: an IP literal or a pinned address (kept for good), or a name whose
   * cached answer is still fresh (kept until that answer expires). Otherwise once the name is resolved.
   */
  check(host: string, port: number): EgressVerdict | Promise<EgressVerdict> {
    const known = this.#kept.get(host)?.get(port);
    if (known !== undefined && (known.until === Infinity || Date.now() < known.until)) return known.verdict;
    const target = this.outbound.dialTarget(host, port);
    const pinned = target.address !== target.host || target.port !== port;
    const literal = parseAddress(target.address);
    if (literal) return this.#keep(host, port, this.#judge(target, literal, pinned), Infinity);
    const answer = this.outbound.resolveName(target.address);
    if (!(answer instanceof Promise)) return this.#fromAnswer(host, port, target, pinned, answer);
    return answer.then((a) => this.#fromAnswer(host, port, target, pinned, a));
  }

  #fromAnswer(host: string, port: number, target: DialTarget, pinned: boolean, answer: Fresh<DnsAnswer>): EgressVerdict {
    const { value } = answer;
    const resolved = value.address === null ? null : parseAddress(value.address);
    const verdict: EgressVerdict =
      value.address === null ? { kind: "unresolved", reason: value.reason } : resolved ? this.#judge(target, resolved, pinned) : { kind: "unresolved", reason: `unusable address ${value.address}` };
    return this.#keep(host, port, verdict, answer.expiresAt);
  }

  #keep(host: string, port: number, verdict: EgressVerdict, until: number): EgressVerdict {
    if (this.#keptCount >= KEPT_MAX) {
      this.#kept.clear();
      this.#keptCount = 0;
    }
    let byPort = this.#kept.get(host);
    if (!byPort) this.#kept.set(host, (byPort = new Map()));
    if (!byPort.has(port)) this.#keptCount++;
    byPort.set(port, { verdict, until });
    return verdict;
  }

  #judge(target: DialTarget, address: Address, pinned: boolean): EgressVerdict {
    const ok: EgressVerdict = { kind: "dial", target: { ...target, address: address.text } };
    if (this.#isOwnListener(address, target.port)) return { kind: "denied", address: address.text, reason: "credgate's own listener" };
    if (pinned && (this.config.mode === "self-hosted" || explicitlyAllowed(address, this.#rules))) return ok;
    return egressAllowed(address, this.#rules) ? ok : { kind: "denied", address: address.text, reason: "internal or reserved address" };
  }

  #isOwnListener(address: Address, port: number): boolean {
    if (!this.#ownPorts.has(port)) return false;
    return isLoopbackOrUnspecified(address) || this.#localAddresses.has(address.text);
  }
}

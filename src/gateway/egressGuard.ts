// The egress guard (docs/guards.md#egress-guard): the address the gateway will dial is resolved here, judged, and then
// dialled exactly (no second lookup, so DNS rebinding cannot swap it). Refused: what core/addressRules.ts refuses for
// the mode and the operator's allow/deny lists, and credgate's own API and gateway listeners. A pinned target
// (CREDGATE_RESOLVE / CREDGATE_CONNECT_TO) is the operator's own choice: trusted in self-hosted mode or when its
// address is explicitly allowed.
import { lookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";
import type { Config } from "../runtime/config.ts";
import { egressAllowed, explicitlyAllowed, isLoopbackOrUnspecified, parseAddress, type Address, type EgressRules } from "../core/addressRules.ts";
import type { DialTarget, Outbound } from "../services/outbound.ts";

export type EgressVerdict =
  | { kind: "dial"; target: DialTarget }
  | { kind: "denied"; address: string; reason: string }
  /** The name did not resolve: nothing will be dialled. */
  | { kind: "unresolved"; reason: string };

const FIXED_MAX = 10_000;

export class EgressGuard {
  readonly #rules: EgressRules;
  readonly #ownPorts: Set<number>;
  readonly #localAddresses: Set<string>;
  /** Verdicts that cannot change, by host then port (no key string made per request). */
  readonly #fixed = new Map<string, Map<number, EgressVerdict>>();
  #fixedCount = 0;

  constructor(
    private readonly config: Pick<Config, "mode" | "egressAllow" | "egressDeny" | "port" | "gatewayPort">,
    private readonly outbound: Outbound,
  ) {
    this.#rules = { mode: config.mode, allow: config.egressAllow, deny: config.egressDeny };
    this.#ownPorts = new Set([config.port, config.gatewayPort]);
    this.#localAddresses = new Set(
      Object.values(networkInterfaces())
        .flatMap((list) => list ?? [])
        .map((a) => parseAddress(a.address)?.text)
        .filter((t): t is string => t !== undefined),
    );
  }

  /**
   * Synchronous when no name has to be resolved (an IP literal, a pinned address); those verdicts depend on
   * nothing but the configuration, so they are kept.
   */
  check(host: string, port: number): EgressVerdict | Promise<EgressVerdict> {
    const known = this.#fixed.get(host)?.get(port);
    if (known) return known;
    const target = this.outbound.dialTarget(host, port);
    const pinned = target.address !== target.host || target.port !== port;
    const literal = parseAddress(target.address);
    if (literal) {
      const verdict = this.#judge(target, literal, pinned);
      this.#keep(host, port, verdict);
      return verdict;
    }
    return lookup(target.address).then(
      ({ address }): EgressVerdict => {
        const resolved = parseAddress(address);
        if (!resolved) return { kind: "unresolved", reason: `unusable address ${address}` };
        return this.#judge(target, resolved, pinned);
      },
      (err: NodeJS.ErrnoException): EgressVerdict => ({ kind: "unresolved", reason: err.code ?? err.message }),
    );
  }

  #keep(host: string, port: number, verdict: EgressVerdict): void {
    if (this.#fixedCount >= FIXED_MAX) {
      this.#fixed.clear();
      this.#fixedCount = 0;
    }
    let byPort = this.#fixed.get(host);
    if (!byPort) this.#fixed.set(host, (byPort = new Map()));
    byPort.set(port, verdict);
    this.#fixedCount++;
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

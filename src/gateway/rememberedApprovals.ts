// The gateway's view of remembered approvals (docs/policy.md#remembered-approvals): which agent may pass which
// rule's hold until when, in memory, so the approval stage asks no database. Read whole at start and after a
// `reload`; each `remembered` change event (from this process, the primary, or another instance) applies at once.
import { log } from "../observability/log.ts";
import { clockNow } from "../runtime/clock.ts";
import type { ChangeEvent } from "../events/bus.ts";
import type { Services } from "../services/index.ts";

export class RememberedApprovals {
  /** Agent id → rule logicalId → end (ms since the epoch, on the shifted clock of runtime/clock.ts). */
  #byAgent = new Map<string, Map<string, number>>();
  /** Bumped by every event, so a slower full read does not undo a change that arrived meanwhile. */
  #version = 0;

  private constructor(private readonly services: Services) {}

  static async create(services: Services): Promise<RememberedApprovals> {
    const remembered = new RememberedApprovals(services);
    services.deps.events.on((event) => remembered.#onEvent(event));
    await remembered.#load();
    return remembered;
  }

  /** Whether a request of `agentId` that rule `ruleId` would hold passes without a hold. */
  allows(agentId: string, ruleId: string): boolean {
    const until = this.#byAgent.get(agentId)?.get(ruleId);
    return until !== undefined && until > clockNow();
  }

  #onEvent(event: ChangeEvent): void {
    if (event.kind === "reload") {
      void this.#load();
      return;
    }
    if (event.kind !== "remembered") return;
    this.#version++;
    if (event.expiresAt === null) this.#byAgent.get(event.agentId)?.delete(event.ruleId);
    else this.#set(this.#byAgent, event.agentId, event.ruleId, Date.parse(event.expiresAt));
  }

  #set(map: Map<string, Map<string, number>>, agentId: string, ruleId: string, until: number): void {
    let rules = map.get(agentId);
    if (!rules) map.set(agentId, (rules = new Map()));
    rules.set(ruleId, until);
  }

  async #load(): Promise<void> {
    const version = this.#version;
    try {
      const next = new Map<string, Map<string, number>>();
      for (const r of await this.services.rememberedApprovals.live()) this.#set(next, r.agentId, r.ruleId, Date.parse(r.expiresAt));
      // An event during the read: read again, so neither the read nor the event is lost.
      if (version !== this.#version) return this.#load();
      this.#byAgent = next;
    } catch (err) {
      log.error("remembered approvals not read, retrying", { error: (err as Error).message });
      setTimeout(() => void this.#load(), 1000).unref();
    }
  }
}

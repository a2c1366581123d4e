// Who may inject what (src/services/access.ts): the pure decision the gateway snapshot, the agent setup and
// effective credentials share.
import { describe, expect, test } from "bun:test";
import { decideAccess, servingPartner } from "../../src/services/access.ts";

const secrets = [
  { id: "p1", scope: "project" as const },
  { id: "o1", scope: "organization" as const },
  { id: "t1", scope: "partner" as const },
  { id: "p2", scope: "project" as const },
];
const connections = [{ id: "c1" }, { id: "c2" }, { id: "c3" }];
const grantC2 = { access: "custom", allow: ["send"] };

const decide = (mode: "all" | "grants", secretIds: string[], grants: [string, typeof grantC2][] = []) =>
  decideAccess(mode, { secretIds: new Set(secretIds), connections: new Map(grants) }, secrets, connections);
const injectable = (a: ReturnType<typeof decide>) => ({
  secrets: a.secrets.filter((s) => s.injectable).map((s) => s.secret.id),
  connections: a.connections.filter((c) => c.injectable).map((c) => c.connection.id),
});

describe("decideAccess", () => {
  test("mode all: every secret and connection, grants or not; each connection keeps its grant", () => {
    const a = decide("all", [], [["c2", grantC2]]);
    expect(injectable(a)).toEqual({ secrets: ["p1", "o1", "t1", "p2"], connections: ["c1", "c2", "c3"] });
    expect(a.connections.map((c) => c.grant)).toEqual([null, grantC2, null]);
  });

  test("mode grants: partner secrets always; project and organization secrets and connections only when granted", () => {
    expect(injectable(decide("grants", []))).toEqual({ secrets: ["t1"], connections: [] });
    expect(injectable(decide("grants", ["o1", "p2", "unknown"], [["c2", grantC2]]))).toEqual({ secrets: ["o1", "t1", "p2"], connections: ["c2"] });
  });

  test("every credential is listed once, in the order given, with the secret or connection itself", () => {
    const a = decide("grants", ["p1"]);
    expect(a.secrets.map((s) => s.secret)).toEqual(secrets);
    expect(a.connections.map((c) => c.connection)).toEqual(connections);
  });
});

describe("servingPartner", () => {
  test("the partner of a managed organization, not once it detached; none without one", () => {
    expect(servingPartner({ partnerId: "pt", partnerDetached: false })).toBe("pt");
    expect(servingPartner({ partnerId: "pt", partnerDetached: true })).toBeNull();
    expect(servingPartner({ partnerId: null, partnerDetached: false })).toBeNull();
    expect(servingPartner(null)).toBeNull();
    expect(servingPartner(undefined)).toBeNull();
  });
});

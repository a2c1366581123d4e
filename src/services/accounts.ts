// Accounts (docs/api.md#accounts-and-sessions, cloud): a sign-up creates the person, their organization (they own it), its
// Default project with the Default Agent, and their project key — all or nothing.
import { conflict } from "../core/errors.ts";
import type { ServiceDeps } from "./deps.ts";
import type { OrganizationService, User } from "./organizations.ts";
import type { ProjectService } from "./projects.ts";

export const EMAIL_TAKEN = "An account with this email already exists";

export class AccountService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly orgs: OrganizationService,
    private readonly projects: ProjectService,
  ) {}

  /** `passwordHash`: argon2id, hashed by the caller (outside the transaction: it takes tens of milliseconds). */
  async signUp(email: string, passwordHash: string, name: string | null): Promise<{ user: User; organizationId: string; projectId: string }> {
    return this.deps.store.transaction(async () => {
      if (await this.orgs.getUserByEmail(email)) throw conflict(EMAIL_TAKEN);
      const user = await this.orgs.createUser(email, name, passwordHash);
      // Named after the person; renamed at will (PATCH /org).
      const org = await this.orgs.createOrganization(`${name ?? email.split("@")[0]}'s organization`);
      this.deps.audit.actAs({ kind: "user", id: user.id, userId: user.id }, org.id);
      await this.deps.audit.record({ targetType: "user", targetId: user.id, organizationId: org.id, projectId: null, before: null, after: { email, name, passwordHash } });
      await this.deps.audit.record({ targetType: "organization", targetId: org.id, organizationId: org.id, projectId: null, before: null, after: org });
      await this.orgs.addMember(org.id, user.id, "owner");
      const { project } = await this.projects.create(org.id, "Default", { creatorUserId: user.id, automatic: true });
      return { user, organizationId: org.id, projectId: project.id };
    });
  }
}

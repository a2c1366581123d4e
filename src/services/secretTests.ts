// The secret form's "Test" (docs/injection.md#testing-a-signed-or-minted-secret): a signed or minted secret is
// tried against its issuer without an agent — an AWS key signs STS GetCallerIdentity, a GitHub App key mints an
// installation token — through the same egress path as the gateway. A secret-store secret is read once from its
// store, bypassing the cache (docs/injection.md#testing-a-store-reference). The answer says whether it worked and
// what the issuer or the store said; it never holds the key, the value or a token.
import { badRequest } from "../core/errors.ts";
import type { SecretTestResult } from "../core/records/secrets.ts";
import { amzDate, AwsSigner } from "../crypto/awsSigV4.ts";
import type { GithubAppTokens } from "./githubApps.ts";
import type { EgressCheck } from "./notifications/index.ts";
import type { Outbound } from "./outbound.ts";
import type { SecretOwner, SecretService } from "./secrets.ts";
import type { VaultResolver } from "../vault/resolver.ts";

export const NOT_TESTABLE_MESSAGE = "Only AWS Signature V4 and GitHub App secrets with a stored value can be tested";
const TIMEOUT_MS = 15_000;
const STS_BODY = "Action=GetCallerIdentity&Version=2011-06-15";

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1] ?? null;

export class SecretTester {
  constructor(
    private readonly secrets: SecretService,
    private readonly githubApps: GithubAppTokens,
    private readonly outbound: Outbound,
    private readonly egress: EgressCheck,
    private readonly stores: Pick<VaultResolver, "test">,
  ) {}

  async test(owner: SecretOwner, id: string): Promise<SecretTestResult> {
    const row = await this.secrets.find(owner, id);
    if (row.valueSource === "vault" && row.storeRef !== null) return this.stores.test(row.storeRef);
    const cfg = row.injectionConfig;
    const value = this.secrets.openValue(row);
    if (value === null || (cfg?.awsSigV4 === undefined && cfg?.githubApp === undefined)) throw badRequest(NOT_TESTABLE_MESSAGE);
    if (cfg.githubApp !== undefined) {
      const r = await this.githubApps.check(cfg.githubApp, value);
      return r.ok
        ? { ok: true, message: `GitHub minted an installation token for installation ${cfg.githubApp.installationId} of app ${cfg.githubApp.appId}.` }
        : { ok: false, message: `GitHub did not mint a token: ${r.reason}` };
    }
    return this.#callerIdentity(cfg.awsSigV4!.accessKeyId, value, cfg.awsSigV4!.region);
  }

  /** STS GetCallerIdentity, which every valid key may call: in the secret's region when it names one, else global. */
  async #callerIdentity(accessKeyId: string, secretAccessKey: string, region: string | undefined): Promise<SecretTestResult> {
    const host = region ? `sts.${region}.amazonaws.com` : "sts.amazonaws.com";
    const scope = { region: region ?? "us-east-1", service: "sts" };
    const body = new TextEncoder().encode(STS_BODY);
    const hash = new Bun.CryptoHasher("sha256").update(body).digest("hex");
    const date = new Date();
    const headers = { host, "x-amz-content-sha256": hash };
    const { authorization } = await new AwsSigner({ accessKeyId, secretAccessKey }).signHeaders("POST", "/", [], headers, scope, date);
    try {
      const verdict = await this.egress.check(host, 443);
      if (verdict.kind !== "dial") return { ok: false, message: `AWS STS could not be reached: ${verdict.kind === "denied" ? `egress denied (${verdict.address})` : verdict.reason}` };
      const res = await this.outbound.fetchAt(new URL(`https://${host}/`), verdict.target, {
        method: "POST",
        headers: {
          authorization,
          "x-amz-date": amzDate(date),
          "x-amz-content-sha256": hash,
          "content-type": "application/x-www-form-urlencoded; charset=utf-8",
        },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const xml = await res.text();
      if (res.status !== 200) return { ok: false, message: `AWS refused the key (${res.status}${tag(xml, "Code") ? ` ${tag(xml, "Code")}` : ""}).` };
      return { ok: true, message: `AWS accepted the key: account ${tag(xml, "Account") ?? "?"}, ${tag(xml, "Arn") ?? "unknown identity"}.` };
    } catch (err) {
      return { ok: false, message: `AWS STS could not be reached: ${(err as Error).message}` };
    }
  }
}

// credgate's own access token at a cloud secret store (docs/secret-stores.md#credgates-own-identity): minted on
// first use, kept until 5 minutes before it expires, minted once for concurrent reads. Only the process that reads
// the stores holds it (the resolver's loads run there), so memory is enough: no row, no lease.
import { readTokenAnswer, TOKEN_REQUEST_HEADERS, type TokenRequest } from "../../core/tokenExchange.ts";
import { abortable, readBounded } from "../../core/boundedRead.ts";
import { parseJson, STORE_ANSWER_MAX } from "./cloudRequest.ts";
import { StoreError, type StoreFetch } from "./types.ts";

/** A token is used until this long before its expiry; one with less left is used once and not kept. */
const EXPIRY_MARGIN_MS = 5 * 60 * 1000;
/** A mint has this long, whoever asked first: one reader giving up does not fail the others waiting on it. */
const MINT_TIMEOUT_MS = 15_000;

export class AccessToken {
  #held: { token: string; usableUntil: number } | null = null;
  #minting: Promise<string> | null = null;

  constructor(
    /** "Google", "Azure AD": names the issuer in failures. */
    private readonly issuer: string,
    /** The token request, built afresh for every mint (a Google assertion is signed for the moment). */
    private readonly request: () => TokenRequest | Promise<TokenRequest>,
    private readonly fetch: StoreFetch,
    private readonly now: () => number,
  ) {}

  /** The token: the held one while it is fresh, else the mint in progress or a new one. */
  get(signal: AbortSignal): Promise<string> {
    if (this.#held !== null && this.now() < this.#held.usableUntil) return Promise.resolve(this.#held.token);
    this.#minting ??= this.#mint().finally(() => (this.#minting = null));
    return abortable(this.#minting, signal);
  }

  /** Forgets the held token (the store refused it: revoked, or the identity changed). */
  drop(token: string): void {
    if (this.#held?.token === token) this.#held = null;
  }

  async #mint(): Promise<string> {
    let request: TokenRequest;
    try {
      request = await this.request();
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError("token_request", `${this.issuer} token request could not be made: ${(err as Error).message}`);
    }
    let res: Response;
    try {
      res = await this.fetch(request.url, { method: "POST", headers: TOKEN_REQUEST_HEADERS, body: request.form.toString(), redirect: "manual", signal: AbortSignal.timeout(MINT_TIMEOUT_MS) });
    } catch (err) {
      // A failure to connect is the issuer's (with the upstream proxy's reason when it refused); the outbound path's
      // own refusals (egress guard, resolution) say what they need to.
      if (err instanceof StoreError && err.reason === "unreachable") throw new StoreError("token_unreachable", `${this.issuer} could not be reached for a token (${request.url.host})${err.why ? ` ${err.why}` : ""}`, err.why);
      if (err instanceof StoreError) throw err;
      throw new StoreError("token_unreachable", `${this.issuer} could not be reached for a token (${request.url.host}): ${(err as Error).message}`);
    }
    const answer = readTokenAnswer(this.issuer, res.status, parseJson(await readBounded(res.body, STORE_ANSWER_MAX).catch(() => null)));
    if (!answer.ok) throw new StoreError("token_refused", `${answer.reason} for credgate's own identity`);
    const expiresAt = this.now() + answer.expiresInSeconds * 1000;
    this.#held = expiresAt - EXPIRY_MARGIN_MS > this.now() ? { token: answer.token, usableUntil: expiresAt - EXPIRY_MARGIN_MS } : null;
    return answer.token;
  }
}

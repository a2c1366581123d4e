// What a test sees of the OAuth test server (oauthServer.ts): its options, the clients and users it knows, the
// requests it recorded and the tokens it issued.
import type { TestPki } from "./upstream.ts";

export interface OAuthTestUser {
  login: string;
  id: number;
}

export interface OAuthClientConfig {
  clientId: string;
  clientSecret: string;
  /**
   * Registered callback URLs. GitHub's rule applies: a `redirect_uri` must have the same scheme, host and
   * port as one of them and a path at or below its path. Empty or absent: any http(s) URL is accepted.
   */
  redirectUris?: string[];
}

export interface OAuthServerOptions {
  clients?: OAuthClientConfig[];
  user?: OAuthTestUser;
  /** Access-token lifetime in seconds (default 3600); `setAccessTokenLifetime` changes it for new tokens. */
  accessTokenLifetime?: number;
  /** Refresh-token lifetime in seconds (default GitHub's 15897600, about six months). */
  refreshTokenLifetime?: number;
  /** Leaf certificate names (default github.com, api.github.com and 127.0.0.1). */
  names?: string[];
  /** Reuse an existing CA + leaf instead of making one. */
  pki?: TestPki;
  /** Listening port on 127.0.0.1 (default: a free one). */
  port?: number;
}

/** One request the server received, whatever its route. */
export interface OAuthSeenRequest {
  method: string;
  host: string;
  /** Path and query as received. */
  url: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  route: "authorize" | "token" | "user" | "api";
  /** The answer's status (set once it is known). */
  status?: number;
  /** For token requests: the form's grant_type. */
  grantType?: string;
  at: number;
}

export interface IssuedToken {
  accessToken: string;
  refreshToken?: string;
  accessTokenExpiresAt: Date;
  grantType: string;
  clientId: string;
  scope: string[];
  at: number;
}

export interface OAuthTestServer {
  port: number;
  /** `https://127.0.0.1:<port>` (the leaf also names 127.0.0.1). */
  url: string;
  pki: TestPki;
  caFile: string;
  /** The CA certificate (PEM), e.g. for Bun fetch `tls: { ca }`. */
  caPem: string;
  user: OAuthTestUser;
  /** Every request received, in order. */
  requests: OAuthSeenRequest[];
  /** The API-echo requests (every path that is not an OAuth or /user route). */
  apiRequests: OAuthSeenRequest[];
  /** Token-endpoint requests received, by form grant_type (counted whatever the answer). */
  tokenRequests: Record<string, number>;
  /** Access tokens issued, oldest first. */
  issued: IssuedToken[];
  /** The access tokens issued, oldest first. */
  issuedAccessTokens(): string[];
  /** Forgets every refresh token: the next refresh_token grant answers 400 invalid_grant. */
  revokeRefreshTokens(): void;
  /** Forgets every access token: /user answers 401 for them. */
  revokeAccessTokens(): void;
  /** The next `n` token requests get `status` (default 500) with `{"error":"server_error"}`. */
  failNextTokenRequests(n: number, status?: number): void;
  /**
   * Successful refresh_token answers wait this long after the grant (the old refresh token already spent), while
   * a refused one is answered at once: the winner of two concurrent refreshes hears of its token last. Default 0.
   */
  delayRefreshAnswers(ms: number): void;
  /**
   * While true, refresh_token requests are held before the server looks at them; false answers the held ones. A
   * held request whose client goes away (its connection closes) is dropped unseen: its refresh token is not spent.
   */
  holdRefreshRequests(hold: boolean): void;
  /** Refresh requests held now. */
  readonly heldRefreshRequests: number;
  /** Held refresh requests dropped because their client went away. */
  readonly abandonedRefreshRequests: number;
  /** Grants revoked by reuse detection (a spent refresh token presented again), oldest first. */
  revokedGrants: { grant: string; reusedRefreshToken: string; at: number }[];
  /** Whether an access token is still good (issued, not revoked with its grant). */
  accessTokenLive(accessToken: string): boolean;
  setAccessTokenLifetime(seconds: number): void;
  /**
   * While false, token answers carry no `refresh_token` (and none is kept), like a provider that issues
   * access tokens with an expiry but no way to renew them. Default true.
   */
  setIssueRefreshTokens(issue: boolean): void;
  /** While set, the authorize endpoint redirects with `error=access_denied` (the user clicked "Cancel"). */
  setDeny(deny: boolean): void;
  setUser(user: OAuthTestUser): void;
  addClient(client: OAuthClientConfig): void;
  close(): Promise<void>;
}

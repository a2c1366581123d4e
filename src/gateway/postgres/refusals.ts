// What the database listener answers when it will not go on (docs/databases.md#refusals): PostgreSQL errors with
// a SQLSTATE, worded as pg_hba's are — what was refused and why — never HTTP. FATAL ones end the connection.
export interface Refusal {
  code: string;
  message: string;
}

export const needsTls: Refusal = { code: "28000", message: "credgate: connect with sslmode=require: the agent token is a password" };
export const invalidToken: Refusal = { code: "28P01", message: "credgate: invalid agent token" };
export const noUser: Refusal = {
  code: "28000",
  message: "credgate: no user name in the startup packet: the user is the name of a database secret",
};
export const noCredential = (user: string): Refusal => ({ code: "28000", message: `credgate: no database credential "${user}" for this agent` });
export const databaseNotAllowed = (db: string): Refusal => ({ code: "42501", message: `credgate: database "${db}" is not allowed for this credential` });
export const credentialChanged = (user: string): Refusal => ({
  code: "28000",
  message: `credgate: the database credential "${user}" has changed (server, user or TLS): reconnect`,
});
export const upstreamFailed = (reason: string): Refusal => ({ code: "08006", message: `credgate: could not connect to the database: ${reason}` });
/** No lease from Vault's database secrets engine for a `vault-db://` credential (docs/vault.md#database-leases). */
export const leaseFailed = (secret: string, reason: string): Refusal => ({
  code: "08006",
  message: `credgate: could not connect to the database: no lease from HashiCorp Vault for "${secret}": ${reason}`,
});
export const protocolViolation = (what: string): Refusal => ({ code: "08P01", message: `credgate: ${what}` });
export const unsupportedProtocol = (major: number, minor: number): Refusal => ({
  code: "0A000",
  message: `credgate: unsupported frontend protocol ${major}.${minor}: only protocol 3 is supported`,
});
export const authenticationTimeout: Refusal = { code: "08006", message: "credgate: the connection did not authenticate within 60 seconds" };
export const shuttingDown: Refusal = { code: "57P01", message: "credgate: terminating the connection: the gateway is shutting down" };
export const functionCallRefused: Refusal = {
  code: "0A000",
  message: "credgate: the function call message is not supported: call the function in a statement (SELECT f(...))",
};
/** Non-ASCII statement text behind unsynced extended messages on a guarded credential (session.ts, #judge). */
export const nonAsciiUnsynced: Refusal = {
  code: "0A000",
  message: "credgate: a statement with non-ASCII text cannot follow extended-protocol messages not yet synced on this credential; send a Sync first",
};
export const statementTooLarge = (limit: number): Refusal => ({
  code: "54000",
  message: `credgate: a statement over ${limit / (1024 * 1024)} MiB cannot be judged; send it in parts or use COPY`,
});
/** The server changed a setting that makes it read statements otherwise than credgate's checks (`unsafeForStatementChecks`). */
export const statementsUncheckable = (reason: string): Refusal => ({
  code: "42501",
  message: `credgate: the server's ${reason}: this session's statements can no longer be checked; reconnect`,
});

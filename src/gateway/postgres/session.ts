// One agent's database session, relayed (docs/databases.md#the-relay). The agent's messages go to the server as
// they came, whole chunks at a time, except those that carry SQL: a Query and a Parse are read whole (the walk
// over the agent's stream is agentMessages.ts) and judged here (StatementJudge) before they leave; a refused one
// never reaches the server, and its ErrorResponse is put in the reply stream where the agent expects it
// (serverReplies.ts). After a refused Parse the extended-protocol messages up to the next Sync are dropped, as the
// server itself drops them after an error, and the Sync is answered with ReadyForQuery. A statement waiting for a
// person (an approval) pauses this session's agent→server direction only. Only message headers are read
// otherwise; bytes stream both ways with backpressure.
import type * as net from "node:net";
import { log } from "../../observability/log.ts";
import type { AgentSocket } from "../client/socket.ts";
import type { CancelKey, CancelTarget } from "./cancelKeys.ts";
import { splitStatements } from "../../core/sqlStatements.ts";
import type { Recheck } from "./agentAuth.ts";
import type { DbSession } from "./dbSession.ts";
import type { StatementJudge, StatementVerdict } from "./judge.ts";
import type { StatementLogRow } from "./statementLog.ts";
import type { UpstreamSession } from "./upstream.ts";
import { functionCallRefused, nonAsciiUnsynced, protocolViolation, shuttingDown, statementsUncheckable, type Refusal } from "./refusals.ts";
import { unsafeForStatementChecks } from "./startupParams.ts";
import { AgentMessageWalk, F, P, Q, S, X } from "./agentMessages.ts";
import { ServerReplies, type StatementRecord } from "./serverReplies.ts";
import { errorResponse, parseParse, parseQuery, readyForQuery } from "./wire.ts";

const SYNC = Uint8Array.of(S, 0, 0, 0, 4);
const TERMINATE = Uint8Array.of(X, 0, 0, 0, 4);
/** A byte of 0x80 or more in the message (read as UTF-8, one that is not valid is U+FFFD: still non-ASCII). */
const NON_ASCII = /[^\x00-\x7f]/;

/** A Query or Parse being judged: what it says, and the verdicts so far. */
interface Judging {
  raw: Buffer;
  type: number;
  text: string;
  statements: string[];
  verdicts: StatementVerdict[];
  receivedAt: number;
}

export interface SessionDeps {
  judge: Pick<StatementJudge, "judge">;
  /** Before each statement: the agent, its credential and the database still stand (agentAuth.ts); `db` is brought up to date. */
  recheck(db: DbSession, token: string): Recheck | Promise<Recheck>;
  /** Writes one request-log row (statementLog.ts). */
  logStatement(db: DbSession, row: StatementLogRow): void;
  /** Sends a CancelRequest with the server's real key. */
  forwardCancel(db: DbSession, backendKey: UpstreamSession["backendKey"]): Promise<void>;
}

export class DatabaseSession implements CancelTarget {
  readonly #agent: AgentSocket;
  readonly #server: net.Socket;
  readonly #db: DbSession;
  readonly #deps: SessionDeps;
  readonly #backendKey: UpstreamSession["backendKey"];
  readonly #token: string;
  readonly #replies: ServerReplies;
  readonly #abort = new AbortController();
  /** The agent's message stream, walked (agentMessages.ts). */
  readonly #messages: AgentMessageWalk;
  /** Waiting for a verdict: the agent's chunks wait in `#backlog`, in order. */
  #held = false;
  readonly #backlog: Buffer[] = [];
  #serverFull = false;
  /** Ending with a FATAL error, written in its place behind the answers still owed; the agent is no longer read. */
  #ending = false;
  #closed = false;
  /** The server reported a setting under which credgate's checks no longer read statements as it does: the session ends. */
  #uncheckable: Refusal | null = null;
  /** A non-ASCII statement waits for the server's answers to what was sent before it: called once none is owed. */
  #answered: (() => void) | null = null;
  key: CancelKey | null = null;

  constructor(
    agent: AgentSocket,
    upstream: UpstreamSession,
    db: DbSession,
    /** The agent's token, to recheck before each statement that the session still stands. */
    token: string,
    deps: SessionDeps,
    private readonly onClosed: (session: DatabaseSession) => void,
  ) {
    this.#agent = agent;
    this.#token = token;
    this.#server = upstream.socket;
    this.#db = db;
    this.#deps = deps;
    this.#backendKey = upstream.backendKey;
    this.#replies = new ServerReplies({
      write: (bytes) => agent.write(bytes),
      settle: (record, status) => this.#log(record, status, Math.round(performance.now() - record.sentAt)),
      readyForQuery,
      parameterStatus: (name, value) => this.#serverSetting(name, value),
    });
    for (const [name, value] of upstream.parameters) this.#serverSetting(name, value);
    this.#messages = new AgentMessageWalk({
      replies: this.#replies,
      toServer: (bytes) => this.#toServer(bytes),
      judge: (raw, chunk, pos) => this.#judge(raw, chunk, pos),
      refuse: (type, refusal) => this.#refuse(type, refusal),
      fatal: (refusal) => this.#fatal(refusal),
      terminate: () => this.#terminate(),
    });
  }

  /** Starts relaying: `pending` (server bytes read past the startup) first, then both directions; `early`: the agent's bytes already read. */
  start(pending: Uint8Array, early: Buffer): void {
    const agent = this.#agent;
    const server = this.#server;
    agent.events = {
      data: (chunk) => this.#fromAgent(chunk),
      drain: () => {
        if (this.#replies.full) {
          this.#replies.full = false;
          server.resume();
        }
      },
      close: () => this.#close(),
    };
    server.on("data", (chunk: Buffer) => this.#fromServer(chunk));
    server.on("drain", () => {
      this.#serverFull = false;
      if (!this.#held && !this.#ending) agent.resume();
    });
    server.on("end", () => this.#close());
    server.on("close", () => this.#close());
    server.on("error", () => this.#close());
    if (this.#uncheckable !== null) this.#fatal(this.#uncheckable);
    if (pending.length > 0) this.#fromServer(Buffer.from(pending.buffer, pending.byteOffset, pending.byteLength));
    if (early.length > 0) this.#fromAgent(early);
    server.resume();
    if (!this.#held && !this.#serverFull && !this.#ending) agent.resume();
  }

  cancel(): void {
    this.#deps.forwardCancel(this.#db, this.#backendKey).catch((err: Error) => log.warn("database cancel request failed", { host: this.#db.host, error: err.message }));
  }

  /** The gateway is stopping: an idle session ends now with FATAL 57P01, a busy one once the answers it is owed are in. */
  shutdown(): void {
    this.#fatal(shuttingDown);
  }

  get closed(): boolean {
    return this.#closed;
  }

  destroy(): void {
    this.#agent.destroy();
    this.#close();
  }

  // --- server → agent ---

  #fromServer(chunk: Buffer): void {
    const replies = this.#replies;
    replies.push(chunk);
    if (this.#uncheckable !== null) this.#fatal(this.#uncheckable);
    if (replies.full && this.#agent.needsDrain) this.#server.pause();
    else replies.full = false;
    if (this.#ending) this.#endWhenDelivered();
    if (this.#answered !== null && replies.readiesOwed === 0) this.#wakeAnswered();
  }

  #wakeAnswered(): void {
    const wake = this.#answered;
    this.#answered = null;
    wake?.();
  }

  /** Statements on this credential are classified (readOnly, or writes other than allow): the checks must hold. */
  get #guarded(): boolean {
    const credential = this.#db.credential;
    return credential.readOnly || credential.writes !== "allow";
  }

  /**
   * A setting the server reports (at the start, or changed since: by a function the judge cannot see into, say). On
   * a credential whose statements are classified (readOnly, or writes other than allow), one under which the server
   * reads statements otherwise than the judge ends the session, behind the answers owed (docs/databases.md#the-relay).
   */
  #serverSetting(name: string, value: string): void {
    if (this.#uncheckable !== null || !this.#guarded) return;
    const reason = unsafeForStatementChecks(name, value);
    if (reason !== null) this.#uncheckable = statementsUncheckable(reason);
  }

  // --- agent → server ---

  #fromAgent(chunk: Buffer): void {
    if (this.#ending) return;
    if (this.#held) this.#backlog.push(chunk);
    else this.#messages.walk(chunk, 0);
  }

  #toServer(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (!this.#server.write(bytes) && !this.#serverFull) {
      this.#serverFull = true;
      this.#agent.pause();
    }
  }

  /**
   * Judges a whole Query, Parse or FunctionCall (`raw`, with its header). True when the walk goes on; false when
   * a verdict is awaited (the rest of `chunk`, from `pos`, waits in the backlog).
   */
  #judge(raw: Buffer, chunk: Buffer, pos: number): boolean {
    const type = raw[0]!;
    const receivedAt = performance.now();
    if (type === F) {
      this.#refuse(F, functionCallRefused);
      return true;
    }
    let statements: string[];
    let text: string;
    try {
      text = type === Q ? parseQuery(raw.subarray(5)) : parseParse(raw.subarray(5)).query;
      statements = splitStatements(text);
    } catch {
      this.#fatal(protocolViolation(`malformed ${type === Q ? "Query" : "Parse"} message`));
      return false;
    }
    const job: Judging = { raw, type, text, statements, verdicts: [], receivedAt };
    let outcome: boolean | Promise<boolean>;
    if ((this.#replies.readiesOwed > 0 || this.#replies.unsynced) && this.#guarded && NON_ASCII.test(text)) {
      // Every encoding the server accepts reads bytes below 0x80 as ASCII outside a multibyte character, which
      // needs a lead byte of 0x80 or more; such a text is read as credgate reads it only under the encoding it
      // is judged with. What was sent before may change that encoding (a function): the statement waits for the
      // answers owed, whose ParameterStatus would end the session first (docs/databases.md#the-relay).
      if (this.#replies.unsynced) {
        // The server reports a change only at its next ReadyForQuery, which these messages do not have yet.
        this.#refuse(type, nonAsciiUnsynced);
        return true;
      }
      outcome = new Promise<void>((resolve) => (this.#answered = resolve)).then(() => (this.#closed || this.#ending ? false : this.#judgeNow(job)));
    } else outcome = this.#judgeNow(job);
    if (!(outcome instanceof Promise)) return outcome;
    this.#hold(job, outcome, chunk.subarray(pos));
    return false;
  }

  #judgeNow(job: Judging): boolean | Promise<boolean> {
    if (job.statements.length > 0) return this.#run(job, -1);
    // An empty query: the server answers EmptyQueryResponse; nothing to judge or log.
    this.#forward(job.raw, job.type, job.text, [], []);
    return true;
  }

  /**
   * Judges `job` from step `from` (-1: the session still stands; then each statement) and forwards or refuses it.
   * True when the walk may go on, false when the session ended; a promise when a step has to wait.
   */
  #run(job: Judging, from: number): boolean | Promise<boolean> {
    for (let i = from; i < job.statements.length; i++) {
      const step = i < 0 ? this.#deps.recheck(this.#db, this.#token) : this.#deps.judge.judge(this.#db, job.statements[i]!, this.#abort.signal);
      if (step instanceof Promise) {
        return step.then((v: Recheck | StatementVerdict) => {
          if (this.#closed || this.#ending) return false;
          const settled = this.#apply(job, i, v);
          return settled ?? this.#run(job, i + 1);
        });
      }
      const settled = this.#apply(job, i, step);
      if (settled !== null) return settled;
    }
    this.#forward(job.raw, job.type, job.text, job.statements, job.verdicts);
    return true;
  }

  /** One step's answer: null to go on; true when the message was refused (the session goes on), false when the session ended. */
  #apply(job: Judging, i: number, v: Recheck | StatementVerdict): boolean | null {
    if (i < 0) {
      const check = v as Recheck;
      if (check.ok) return null;
      this.#fatal(check.refusal);
      return false;
    }
    const verdict = v as StatementVerdict;
    if (!verdict.ok) {
      this.#refused(job.type, job.text, job.statements, verdict, i, job.receivedAt);
      return true;
    }
    job.verdicts.push(verdict);
    return null;
  }

  /** A step must be awaited (an approval, a rate-limit count, the snapshot rebuilding): this session's agent→server direction waits. */
  #hold(job: Judging, outcome: Promise<boolean>, rest: Buffer): void {
    this.#held = true;
    this.#agent.pause();
    if (rest.length > 0) this.#backlog.unshift(rest);
    // The message leaves later: keep its own bytes, not a view of the read it came in.
    job.raw = Buffer.from(job.raw);
    outcome
      .catch((err: Error) => {
        if (this.#closed || this.#ending) return;
        log.error("database statement judge failed", { host: this.#db.host, error: err.message });
        this.#refused(job.type, job.text, job.statements, { ok: false, decision: "error", code: "XX000", message: "credgate: the statement could not be judged" }, job.verdicts.length, job.receivedAt);
      })
      .finally(() => this.#release());
  }

  #release(): void {
    this.#held = false;
    if (this.#closed || this.#ending) return;
    while (!this.#held && !this.#closed && this.#backlog.length > 0) this.#messages.walk(this.#backlog.shift()!, 0);
    if (!this.#held && !this.#serverFull) this.#agent.resume();
  }

  #forward(raw: Uint8Array, type: number, text: string, statements: string[], verdicts: StatementVerdict[]): void {
    const sentAt = performance.now();
    this.#toServer(raw);
    if (type === Q) {
      const records: StatementRecord[] = new Array(statements.length);
      for (let i = 0; i < statements.length; i++) records[i] = record(statements[i]!, verdicts[i]!, sentAt);
      this.#replies.queryForwarded(records);
    } else if (statements.length > 0) {
      // A Parse is one statement, logged once, with the verdict that says most (the first not plainly allowed).
      const v = verdicts.find((x) => x.decision !== "allowed") ?? verdicts[0]!;
      this.#replies.parseForwarded(record(text, v, sentAt));
    } else this.#replies.extendedForwarded();
  }

  /** Log rows for a refused Query (each of its statements) or Parse (its text), then the refusal itself. */
  #refused(type: number, text: string, statements: string[], v: Extract<StatementVerdict, { ok: false }>, at: number, receivedAt: number): void {
    const latencyMs = Math.round(performance.now() - receivedAt);
    const refusal = { decision: v.decision, status: 403 as const, latencyMs };
    // The statement refused carries the verdict's approval and rule; the others of its Query were refused with it.
    const own = { ...refusal, ...(v.approvalId !== undefined ? { approvalId: v.approvalId } : {}), rule: v.rule ?? null };
    if (type !== Q) this.#deps.logStatement(this.#db, { statement: text, ...own });
    else for (let i = 0; i < statements.length; i++) this.#deps.logStatement(this.#db, { statement: statements[i]!, ...(i === at ? own : refusal) });
    this.#refuse(type, { code: v.code, message: v.message });
  }

  /**
   * The agent hears the refusal where the server's answer would have been. A Query (or function call): the
   * ErrorResponse and a ReadyForQuery, behind what the server still owes. A Parse: the ErrorResponse, and the
   * messages up to the next Sync are dropped, that Sync answered by credgate. When extended messages were already
   * forwarded without a Sync, their answers are still to come, and nothing marks their end: credgate sends a Sync
   * of its own and writes the refusal in place of its ReadyForQuery — at once, so a client waiting after a Flush
   * hears it without sending its Sync first.
   */
  #refuse(type: number, refusal: Refusal): void {
    const error = errorResponse("ERROR", refusal.code, refusal.message);
    if (type !== P) return this.#replies.insert([error, null]);
    this.#messages.dropTillSync();
    if (!this.#replies.unsynced) return this.#replies.insert([error]);
    this.#toServer(SYNC);
    this.#replies.ownSyncForwarded(error);
  }

  #log(r: StatementRecord, status: 200 | 400 | 403, latencyMs: number): void {
    this.#deps.logStatement(this.#db, {
      statement: r.statement,
      decision: r.decision,
      status,
      latencyMs,
      ...(r.approvalId !== undefined ? { approvalId: r.approvalId } : {}),
      rule: r.rule ?? null,
    });
  }

  // --- the end ---

  /** Terminate: it has been passed on; both sides close once what is written has gone. */
  #terminate(): void {
    this.#server.end();
    this.#agent.end();
    this.#close();
  }

  /**
   * Ends the session with a FATAL error (a broken message, the agent's right gone, the gateway stopping): the error
   * goes behind the answers the agent is still owed, the agent's further messages are dropped, and both sides
   * close once it has been written; the server gets Terminate.
   */
  #fatal(refusal: Refusal): void {
    if (this.#closed || this.#ending) return;
    this.#ending = true;
    this.#backlog.length = 0;
    this.#agent.pause();
    this.#replies.insert([errorResponse("FATAL", refusal.code, refusal.message)]);
    this.#endWhenDelivered();
  }

  #endWhenDelivered(): void {
    if (this.#closed || !this.#replies.delivered) return;
    this.#agent.end();
    this.#server.end(TERMINATE);
    this.#close();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    this.#wakeAnswered();
    this.#backlog.length = 0;
    this.#replies.abandon();
    if (!this.#agent.ended) this.#agent.end();
    if (!this.#server.destroyed) this.#server.end();
    // A server that does not close its side promptly is cut.
    setTimeout(() => this.#server.destroy(), 5000).unref();
    this.onClosed(this);
  }
}

/** A forwarded statement's log entry; an approved write keeps its approval and rule for its row. */
function record(statement: string, v: StatementVerdict, sentAt: number): StatementRecord {
  const r: StatementRecord = { statement, decision: v.decision, sentAt };
  if (v.approvalId !== undefined) r.approvalId = v.approvalId;
  if (v.rule !== undefined) r.rule = v.rule;
  return r;
}

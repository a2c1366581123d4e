// What the stage tests read of a verdict: PASS, or the answer's decision, status, headers and body, whichever
// form the answer took (a Response, a Reply, or a JsonAnswer a connect hook gives for the raw writer).
import type { JsonAnswer } from "../../../src/gateway/errors.ts";
import { Reply } from "../../../src/gateway/reply.ts";
import type { Verdict } from "../../../src/gateway/stage.ts";
import { replyText } from "../../../src/gateway/testing.ts";

export interface Answered {
  decision: string | null;
  status: number;
  headers: Record<string, string>;
  /** The JSON body, or the text when it is not JSON. */
  body: unknown;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The body of an answer, parsed when JSON. */
export async function errorBody(answer: Response | Reply | JsonAnswer): Promise<unknown> {
  if (answer instanceof Reply) return parsed(await replyText(answer));
  if (answer instanceof Response) return parsed(await answer.text());
  return answer.body;
}

/** "pass", or what the hook answered. */
export async function outcome(verdict: Verdict<Response | Reply | JsonAnswer> | Promise<Verdict<Response | Reply | JsonAnswer>>): Promise<"pass" | Answered> {
  const v = await verdict;
  if (v.response === null) return "pass";
  const r = v.response;
  const headers: Record<string, string> = {};
  if (r instanceof Reply) for (const [n, value] of r.headerLines()) headers[n.toLowerCase()] = value;
  else if (r instanceof Response) r.headers.forEach((value, n) => (headers[n] = value));
  else Object.assign(headers, r.headers ?? {});
  return { decision: v.decision, status: r.status, headers, body: await errorBody(r) };
}

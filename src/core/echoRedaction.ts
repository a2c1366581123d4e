// The echo guard's redaction (docs/guards.md#echo-guard): every form of an injected value (valueForms.ts
// echoForms) replaced by `credgate-redacted` in a header value or a reason phrase, and in a byte stream as it
// passes, chunk by chunk. Only the tail that could still be the start of a form is held back (at most the
// longest form − 1 bytes), so a value split across chunks is caught and everything else — an SSE event — goes
// on at once. Pure.
import { NeedleSet } from "./needles.ts";
import { NeedleStream, replaceInString, type NeedleHandler } from "./needleStream.ts";
import { echoForms } from "./valueForms.ts";

export const REDACTED = "credgate-redacted";
/** Shared by every scanner: only ever copied from. */
const REPLACEMENT = Buffer.from(REDACTED);
const redactAll: NeedleHandler = { replacement: () => REPLACEMENT };
const redactString = (): string => REDACTED;

/** The forms of the values that are redacted, as one needle set; null when none is long enough. */
export function echoNeedles(values: readonly string[]): NeedleSet | null {
  const forms = new Set<string>();
  for (const v of values) for (const f of echoForms(v)) forms.add(f);
  return forms.size === 0 ? null : new NeedleSet([...forms]);
}

export function redactText(text: string, set: NeedleSet): string {
  return replaceInString(text, set, redactString);
}

export class StreamRedactor extends NeedleStream {
  constructor(set: NeedleSet) {
    super(set, redactAll);
  }
}

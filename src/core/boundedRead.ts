// Reading an answer or a command's output with a ceiling: a store, an MCP server or a command cannot make credgate
// hold an endless stream. Past the ceiling the stream is cancelled and the caller is told (null), never handed a
// truncated value.

/** The stream's bytes as UTF-8 text, or null when there are more than `max` bytes. */
export async function readBounded(stream: ReadableStream<Uint8Array> | null, max: number): Promise<string | null> {
  if (stream === null) return "";
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      void reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** `work`, or the caller's abort (rejecting with `onAbort()`), whichever comes first; the work goes on for whoever else waits on it. */
export function abortable<T>(work: Promise<T>, signal: AbortSignal, onAbort: () => unknown = () => signal.reason): Promise<T> {
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const aborted = () => reject(onAbort());
    signal.addEventListener("abort", aborted, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener("abort", aborted);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", aborted);
        reject(e);
      },
    );
  });
}

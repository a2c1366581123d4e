// Bounded peeks at a body stream that hand back an equivalent stream: the peeked bytes come first,
// the rest follows untouched, so the full body is still forwarded.

export async function peekStream(stream: ReadableStream<Uint8Array>, limit: number): Promise<{ head: Uint8Array; stream: ReadableStream<Uint8Array> }> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let done = false;
  while (size < limit) {
    const r = await reader.read();
    if (r.done) {
      done = true;
      break;
    }
    chunks.push(r.value);
    size += r.value.byteLength;
  }
  const head = Buffer.concat(chunks).subarray(0, Math.min(size, limit));
  const rest = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      if (done) controller.close();
    },
    async pull(controller) {
      const r = await reader.read();
      if (r.done) controller.close();
      else controller.enqueue(r.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return { head: new Uint8Array(head), stream: rest };
}

// What failed under stdout or stderr. Node tells a failed write to them later, by an 'error'
// event, not from write(): the first failure is kept here for whoever asks.
const failures = new Map<NodeJS.WriteStream, Error | null>();

/** From now on, the stream's first failure is kept (idempotent). */
export function watchFailures(stream: NodeJS.WriteStream): void {
  if (failures.has(stream)) return;
  failures.set(stream, null);
  stream.on('error', (e: Error) => void failures.set(stream, failures.get(stream) ?? e));
}

/** The stream's first failure since it was watched, else null. */
export function failureOf(stream: NodeJS.WriteStream): Error | null {
  return failures.get(stream) ?? null;
}

// Minimal DER writers for tests that wrap or rebuild structures.
export function derLength(n: number): Buffer {
  if (n < 128) return Buffer.from([n]);
  const bytes: number[] = [];
  while (n > 0) {
    bytes.unshift(n & 0xff);
    n = Math.floor(n / 256);
  }
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), derLength(body.length), body]);
}

export const seq = (...content: Uint8Array[]): Buffer => tlv(0x30, ...content);

export function int(n: number): Buffer {
  return tlv(0x02, Buffer.from([n]));
}

/** A TimeStampResp with the given status around a token (or without one). */
export function timeStampResp(status: number, token?: Uint8Array): Buffer {
  return token ? seq(seq(int(status)), token) : seq(seq(int(status)));
}

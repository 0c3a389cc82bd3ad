// DER writers for tests that wrap or rebuild structures: the project's own encoder.
import { encodeTlv as tlv } from '../../src/ledger/anchors/der.js';

export const seq = (...content: Uint8Array[]): Buffer => tlv(0x30, ...content);

export function int(n: number): Buffer {
  return tlv(0x02, Buffer.from([n]));
}

/** A TimeStampResp with the given status around a token (or without one). */
export function timeStampResp(status: number, token?: Uint8Array): Buffer {
  return token ? seq(seq(int(status)), token) : seq(seq(int(status)));
}

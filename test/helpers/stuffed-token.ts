// Builds RFC 3161 tokens whose unsigned certificate bag is stuffed: the signed parts stay the
// genuine token's bytes, only SignedData's certificates [0] is replaced. Used by the bounds tests
// and bench/anchor-bounds.ts.
import { encodeTlv, parseDer } from '../../src/ledger/anchors/der.js';

/** The token with its certificates [0] replaced by `certs` (inserted when the token had none). */
export function withCertificateBag(token: Uint8Array, certs: Uint8Array[]): Buffer {
  const ci = parseDer(token);
  const sd = ci.children[1].children[0];
  const fields = sd.children.filter((c) => c.tag !== 0xa0).map((c) => c.bytes);
  // version, digestAlgorithms, encapContentInfo, [0] certificates, signerInfos
  const bag = encodeTlv(0xa0, ...certs);
  const signedData = encodeTlv(0x30, fields[0], fields[1], fields[2], bag, ...fields.slice(3));
  return encodeTlv(0x30, ci.children[0].bytes, encodeTlv(0xa0, signedData));
}

/**
 * `n` distinct certificates that parse (node:crypto and our DER reader) but chain to nothing:
 * copies of `der` with the last three bytes of the serial number set to a counter.
 */
export function parseableCopies(der: Uint8Array, n: number): Buffer[] {
  const src = Buffer.from(der);
  const tbs = parseDer(src).children[0];
  const serial = tbs.children[tbs.children[0].tag === 0xa0 ? 1 : 0].content;
  if (serial.length < 4) throw new Error('serial too short to vary');
  const at = serial.byteOffset - src.byteOffset + serial.length - 3;
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const c = Buffer.from(src);
    c[at] = (i >> 16) & 0xff;
    c[at + 1] = (i >> 8) & 0xff;
    c[at + 2] = i & 0xff;
    out.push(c);
  }
  return out;
}

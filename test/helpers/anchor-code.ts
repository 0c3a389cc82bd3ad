// What an anchor check says, as one value a table of cases can compare: 'valid' or its code.
import { AnchorError, type AnchorErrorCode } from '../../src/ledger/anchors/errors.js';

export async function anchorCode(p: Promise<unknown>): Promise<AnchorErrorCode | 'valid'> {
  try {
    await p;
    return 'valid';
  } catch (e) {
    if (e instanceof AnchorError) return e.code;
    throw e;
  }
}

/** The same for a check that runs synchronously. */
export function anchorCodeOf(f: () => unknown): AnchorErrorCode | 'valid' {
  try {
    f();
    return 'valid';
  } catch (e) {
    if (e instanceof AnchorError) return e.code;
    throw e;
  }
}

// A record verify passes carries only what its checks read. An epoch entry is signed, so a
// member the gate never writes there (a note, a second root) would verify with the key holder's
// signature though no check looked at it; a stored anchor is signed by no one here, so a member
// beside its token or Rekor entry (a `source`, a second proof) is data an auditor would see in a
// verified ledger that nothing checked. Both are refused instead of carried along.

/** The members of an epoch entry (core/entries.ts EpochFields and the entry header). */
const EPOCH = new Set(['v', 'seq', 'ts', 'prev', 'kind', 'first', 'last', 'size', 'root', 'sig']);
const ANCHOR: Record<string, Set<string>> = {
  rfc3161: new Set(['epoch', 'kind', 'token']),
  rekor: new Set(['epoch', 'kind', 'entry']),
};
/** A stored Rekor entry as the gate's client writes it (rekor/client.ts): v1 has a signed entry timestamp, v2 not. */
const REKOR_ENTRY = new Set(['canonicalizedBody', 'integratedTime', 'logIndex', 'logID', 'signedEntryTimestamp', 'inclusionProof']);
const INCLUSION_PROOF = new Set(['logIndex', 'treeSize', 'rootHash', 'hashes', 'checkpoint']);

/** The first member of `o` not in `known`, or null. */
function unknownIn(o: object, known: Set<string>, path: string): string | null {
  for (const k of Object.keys(o)) if (!known.has(k)) return path + JSON.stringify(k);
  return null;
}

/** The first member of an epoch entry that the gate does not write, or null. */
export function unknownEpochMember(entry: object): string | null {
  return unknownIn(entry, EPOCH, '');
}

/** The first member of a stored anchor (of a known kind) that the gate does not write, or null. */
export function unknownAnchorMember(a: { kind: string }): string | null {
  const known = ANCHOR[a.kind];
  if (!known) return null; // an unknown kind is refused by the anchor check itself
  const top = unknownIn(a, known, '');
  if (top !== null || a.kind !== 'rekor') return top;
  const entry = (a as { entry?: unknown }).entry;
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return null; // refused as malformed by the Rekor check
  const inEntry = unknownIn(entry, REKOR_ENTRY, 'entry.');
  if (inEntry !== null) return inEntry;
  const proof = (entry as { inclusionProof?: unknown }).inclusionProof;
  if (proof === null || typeof proof !== 'object' || Array.isArray(proof)) return null;
  return unknownIn(proof, INCLUSION_PROOF, 'entry.inclusionProof.');
}

/** A proof file (proof.ts) and its inclusion path. */
const PROOF = new Set(['format', 'version', 'entry', 'epoch', 'inclusion', 'anchors']);
const INCLUSION = new Set(['index', 'size', 'hashes']);
/** An export's header line (export.ts ExportHeader). */
const EXPORT_HEADER = new Set(['format', 'version', 'public_key', 'key_id', 'gate_id', 'entries', 'anchors', 'exported_at']);

/** The first member of a proof file that `ledger prove` does not write, or null. */
export function unknownProofMember(p: { inclusion: object }): string | null {
  return unknownIn(p, PROOF, '') ?? unknownIn(p.inclusion, INCLUSION, 'inclusion.');
}

/** The first member of an export header that `ledger export` does not write, or null. */
export function unknownHeaderMember(h: object): string | null {
  return unknownIn(h, EXPORT_HEADER, '');
}

// PKCS#11 URIs (RFC 7512) naming the gate's key: `pkcs11:token=T;object=O?module-path=/x.so`.
// Strict: an attribute we do not act on would silently widen or narrow what the URI names, so
// anything but the attributes below is refused by name, as is a PIN inside the URI (a URI is
// given on the command line and recorded in the home; the PIN comes from a file or the
// environment only).

export interface Pkcs11Uri {
  /** The module (shared library) to load: `module-path`, absolute. */
  modulePath: string;
  /** Token selectors (at least one of token, serial, slot-id). */
  token?: string;
  serial?: string;
  manufacturer?: string;
  model?: string;
  slotId?: number;
  /** Key selectors (at least one of object, id): CKA_LABEL and CKA_ID. */
  object?: string;
  id?: Buffer;
  /** The URI as given: recorded in the home and named in messages (it holds no secret). */
  text: string;
}

export class UriError extends Error {}

const PATH_ATTRS = new Set(['token', 'serial', 'manufacturer', 'model', 'slot-id', 'object', 'id', 'type']);
const QUERY_ATTRS = new Set(['module-path']);

// RFC 3986 percent-decoding into bytes; a stray % is an error, not a literal.
function pctBytes(s: string, what: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '%') {
      const h = s.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(h)) throw new UriError(`PKCS#11 URI: bad percent-encoding in ${what}`);
      out.push(parseInt(h, 16));
      i += 2;
    } else {
      out.push(...Buffer.from(c, 'utf8'));
    }
  }
  return Buffer.from(out);
}

function pctText(s: string, what: string): string {
  const b = pctBytes(s, what);
  const t = b.toString('utf8');
  if (!Buffer.from(t, 'utf8').equals(b)) throw new UriError(`PKCS#11 URI: ${what} is not UTF-8`);
  return t;
}

function attrs(part: string, sep: string, allowed: Set<string>, where: string): Map<string, string> {
  const out = new Map<string, string>();
  if (part === '') return out;
  for (const a of part.split(sep)) {
    const eq = a.indexOf('=');
    if (eq <= 0) throw new UriError(`PKCS#11 URI: ${where} attribute "${a.slice(0, 40)}" has no name=value`);
    const name = a.slice(0, eq).toLowerCase();
    if (name === 'pin-value' || name === 'pin-source')
      throw new UriError(`PKCS#11 URI: ${name} is refused (a PIN never goes on the command line): use --pin-file FILE or CLOAKPIPE_PKCS11_PIN`);
    if (!allowed.has(name)) throw new UriError(`PKCS#11 URI: the ${where} attribute "${name.slice(0, 40)}" is not supported`);
    if (out.has(name)) throw new UriError(`PKCS#11 URI: ${name} is given twice`);
    out.set(name, a.slice(eq + 1));
  }
  return out;
}

export function isPkcs11Uri(s: string): boolean {
  return /^pkcs11:/i.test(s);
}

export function parsePkcs11Uri(text: string): Pkcs11Uri {
  if (!isPkcs11Uri(text)) throw new UriError('a token key is named by a pkcs11: URI (RFC 7512)');
  const rest = text.slice('pkcs11:'.length);
  const q = rest.indexOf('?');
  const path = attrs(q < 0 ? rest : rest.slice(0, q), ';', PATH_ATTRS, 'path');
  const query = attrs(q < 0 ? '' : rest.slice(q + 1), '&', QUERY_ATTRS, 'query');
  const modulePath = query.has('module-path') ? pctText(query.get('module-path')!, 'module-path') : undefined;
  if (!modulePath) throw new UriError('PKCS#11 URI: module-path=/path/to/module.so is required (which PKCS#11 library to load)');
  if (!modulePath.startsWith('/')) throw new UriError('PKCS#11 URI: module-path must be an absolute path');
  const type = path.has('type') ? pctText(path.get('type')!, 'type') : 'private';
  if (type !== 'private') throw new UriError('PKCS#11 URI: type must be private (the URI names the signing key)');
  const out: Pkcs11Uri = { modulePath, text };
  for (const [name, field] of [['token', 'token'], ['serial', 'serial'], ['manufacturer', 'manufacturer'], ['model', 'model'], ['object', 'object']] as const)
    if (path.has(name)) out[field] = pctText(path.get(name)!, name);
  if (path.has('id')) {
    out.id = pctBytes(path.get('id')!, 'id');
    if (out.id.length === 0) throw new UriError('PKCS#11 URI: id is empty');
  }
  if (path.has('slot-id')) {
    const v = pctText(path.get('slot-id')!, 'slot-id');
    if (!/^(0|[1-9][0-9]{0,15})$/.test(v) || !Number.isSafeInteger(Number(v))) throw new UriError('PKCS#11 URI: slot-id is not a decimal number');
    out.slotId = Number(v);
  }
  if (out.token === undefined && out.serial === undefined && out.slotId === undefined)
    throw new UriError('PKCS#11 URI: name the token (token=LABEL, serial= or slot-id=)');
  if (out.object === undefined && out.id === undefined) throw new UriError('PKCS#11 URI: name the key (object=LABEL or id=)');
  return out;
}

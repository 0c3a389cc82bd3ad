// A real RFC 3161 TSA for tests: `openssl ts -reply` behind a small HTTP server on 127.0.0.1.
// Each instance has its own root CA and an ECDSA P-256 signing certificate with a critical
// timeStamping EKU; ESSCertIDv2 with SHA-256. Start two for an untrusted-TSA test.
// `mode` makes it misbehave for negative tests. `emptySubject` gives the signing certificate an
// empty subject (legal: RFC 5280 section 4.1.2.6, the name then sits in a critical subjectAltName).
// `signers` issues more signing certificates under the same root, for the same key and subject,
// each with its own extendedKeyUsage (openssl extension syntax; null: none at all); setting
// `tsa.signer` to one's name makes the TSA sign with it. `openssl ts -reply` refuses a signer
// without a lone critical timeStamping EKU (TS_RESP_CTX_set_signer_cert checks the purpose), so
// the TSTInfo it produced is re-signed by `openssl cms -sign -cades` with that certificate: a real
// CMS signature, an ESSCertIDv2 naming it, the certificate embedded. Only the certificate differs.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { oid, parseDer, T } from '../../src/ledger/anchors/der.js';
import { buildTimeStampReq } from '../../src/ledger/anchors/tsa/client.js';
import { HASH_BY_OID } from '../../src/ledger/anchors/tsa/oids.js';
import { timeStampResp } from './der.js';
import { listenLocal } from './local-http.js';

const run = promisify(execFile);

export type TsaMode = 'ok' | 'reject' | 'wrong-nonce' | 'wrong-digest' | 'http-500' | 'hang' | 'garbage';

export type TestTsa = {
  url: string;
  /** The TSA chain, signing certificate first and root last (what --tsa-root takes). */
  chainPem: string;
  rootPem: string;
  dir: string;
  mode: TsaMode;
  /** A name from `signers`: the certificate that signs; undefined, the TSA's own (`openssl ts -reply`). */
  signer?: string;
  /** Each of `signers`' certificates (PEM), by name. */
  signerPem: Record<string, string>;
  requests: number;
  close(): Promise<void>;
};

async function openssl(dir: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir });
}

export type TsaOptions = { emptySubject?: boolean; signers?: Record<string, string | null> };

export async function startOpensslTsa(name = 'Test TSA', opts: TsaOptions = {}): Promise<TestTsa> {
  const dir = mkdtempSync(join(tmpdir(), 'cp-tsa-'));
  const signers = Object.entries(opts.signers ?? {});
  const section = (eku: string | null) => [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,nonRepudiation',
    ...(eku === null ? [] : [`extendedKeyUsage=${eku}`]),
    'subjectKeyIdentifier=hash',
    'authorityKeyIdentifier=keyid',
    ...(opts.emptySubject ? ['subjectAltName=critical,DNS:tsa.cloakpipe.test'] : []),
  ];
  writeFileSync(
    join(dir, 'ext.cnf'),
    [
      '[tsa_ext]',
      ...section('critical,timeStamping'),
      ...signers.flatMap(([, eku], i) => [`[signer_${i}]`, ...section(eku)]),
      '',
    ].join('\n'),
  );
  await openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'root.key');
  await openssl(dir, 'req', '-x509', '-new', '-key', 'root.key', '-subj', `/O=cloakpipe tests/CN=${name} Root`, '-days', '3650', '-out', 'root.pem',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  await openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'tsa.key');
  await openssl(dir, 'req', '-new', '-key', 'tsa.key', '-subj', opts.emptySubject ? '/' : `/O=cloakpipe tests/CN=${name}`, '-out', 'tsa.csr');
  await openssl(dir, 'x509', '-req', '-in', 'tsa.csr', '-CA', 'root.pem', '-CAkey', 'root.key', '-CAcreateserial', '-days', '365', '-sha256',
    '-extfile', 'ext.cnf', '-extensions', 'tsa_ext', '-out', 'tsa.pem');
  const signerPem: Record<string, string> = {};
  for (const [i, [signer]] of signers.entries()) {
    // One at a time: each increments root.srl, so every certificate has its own serial.
    await openssl(dir, 'x509', '-req', '-in', 'tsa.csr', '-CA', 'root.pem', '-CAkey', 'root.key', '-CAserial', 'root.srl', '-days', '365', '-sha256',
      '-extfile', 'ext.cnf', '-extensions', `signer_${i}`, '-out', `signer_${i}.pem`);
    signerPem[signer] = readFileSync(join(dir, `signer_${i}.pem`), 'utf8');
  }
  writeFileSync(join(dir, 'serial'), '01\n');
  writeFileSync(
    join(dir, 'ts.cnf'),
    [
      '[ tsa ]',
      'default_tsa = tsa_config1',
      '[ tsa_config1 ]',
      `serial = ${join(dir, 'serial')}`,
      'crypto_device = builtin',
      `signer_cert = ${join(dir, 'tsa.pem')}`,
      `signer_key = ${join(dir, 'tsa.key')}`,
      `certs = ${join(dir, 'tsa.pem')}`,
      'signer_digest = sha256',
      'default_policy = 1.3.6.1.4.1.4146.2.3',
      'digests = sha256, sha384, sha512',
      'accuracy = secs:1',
      'ordering = no',
      'tsa_name = yes',
      'ess_cert_id_chain = no',
      'ess_cert_id_alg = sha256',
      '',
    ].join('\n'),
  );
  const rootPem = readFileSync(join(dir, 'root.pem'), 'utf8');
  const chainPem = readFileSync(join(dir, 'tsa.pem'), 'utf8') + rootPem;

  let seq = 0;
  let queue: Promise<unknown> = Promise.resolve();
  const reply = async (query: Buffer, signer: string | undefined): Promise<Buffer> => {
    const n = ++seq;
    const q = join(dir, `q${n}.tsq`);
    const r = join(dir, `r${n}.tsr`);
    writeFileSync(q, query);
    if (signer === undefined) {
      await openssl(dir, 'ts', '-reply', '-config', join(dir, 'ts.cnf'), '-queryfile', q, '-out', r);
      return readFileSync(r);
    }
    const i = signers.findIndex(([s]) => s === signer);
    if (i < 0) throw new Error(`no signer ${signer}`);
    const t = join(dir, `t${n}.der`);
    const tst = join(dir, `tst${n}.der`);
    await openssl(dir, 'ts', '-reply', '-config', join(dir, 'ts.cnf'), '-queryfile', q, '-token_out', '-out', t);
    await openssl(dir, 'cms', '-verify', '-noverify', '-inform', 'DER', '-in', t, '-out', tst); // the TSTInfo, as signed
    await openssl(dir, 'cms', '-sign', '-binary', '-nodetach', '-cades', '-nosmimecap', '-md', 'sha256', '-econtent_type', '1.2.840.113549.1.9.16.1.4',
      '-in', tst, '-signer', `signer_${i}.pem`, '-inkey', 'tsa.key', '-outform', 'DER', '-out', r);
    return timeStampResp(0, readFileSync(r));
  };

  // Rewrites a request (same imprint / nonce, or changed) to make the TSA answer another one.
  const rewrite = (query: Buffer, change: 'nonce' | 'digest'): Buffer => {
    const req = parseDer(query);
    const mi = req.children[1];
    const algorithm = HASH_BY_OID[oid(mi.children[0].children[0], 'imprint algorithm')] as 'sha256' | 'sha384' | 'sha512';
    const value = Buffer.from(mi.children[1].content);
    const nonceNode = req.children.find((c, i) => i > 1 && c.tag === T.INTEGER);
    const nonce = nonceNode ? BigInt('0x' + nonceNode.content.toString('hex')) : 1n;
    if (change === 'digest') value[0] ^= 0xff;
    return buildTimeStampReq({ algorithm, value }, change === 'nonce' ? nonce + 1n : nonce);
  };

  const tsa: TestTsa = {
    url: '',
    chainPem,
    rootPem,
    dir,
    mode: 'ok',
    signerPem,
    requests: 0,
    close: async () => {
      await local.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      tsa.requests++;
      const body = Buffer.concat(chunks);
      if (req.method !== 'POST' || req.headers['content-type'] !== 'application/timestamp-query') {
        res.writeHead(415).end();
        return;
      }
      const mode = tsa.mode;
      if (mode === 'hang') return;
      if (mode === 'http-500') {
        res.writeHead(500).end('boom');
        return;
      }
      const send = (b: Buffer) => res.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(b);
      if (mode === 'reject') return send(timeStampResp(2));
      if (mode === 'garbage') return send(Buffer.from('not a timestamp'));
      const query = mode === 'wrong-nonce' ? rewrite(body, 'nonce') : mode === 'wrong-digest' ? rewrite(body, 'digest') : body;
      const signer = tsa.signer;
      const job = queue.then(() => reply(query, signer));
      queue = job.catch(() => undefined);
      job.then(send, () => res.writeHead(500).end());
    });
  });
  const local = await listenLocal(server);
  tsa.url = `${local.url}/tsr`;
  return tsa;
}

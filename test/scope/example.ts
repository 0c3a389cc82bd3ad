// The worked example of docs/scope.md (examples/scope/): the gate history behind its report.
// Shared by the example test and scripts/scope-example.mjs, so the documented report is always
// the command's output over these inputs.
import { join } from 'node:path';
import { loadManifest } from '../../src/contract/manifest.js';
import { History } from './fixtures.js';

export const EXAMPLE_DIR = 'examples/scope';
export const EXAMPLE_MANIFEST = join(EXAMPLE_DIR, 'order-service.yaml');
export const EXAMPLE_EVIDENCE = [join(EXAMPLE_DIR, 'orders-audit.json'), join(EXAMPLE_DIR, 'confine-evidence.json')];

/** The example's calls: two committed orders, a refused one, one that timed out, a lookup. */
export const ORDERS = [
  { key: 'K-20261120-0001', args: { customer_id: 'C104211', sku: 'DESK-STD', quantity: 1 }, result: 'ok' as const },
  { key: 'K-20261120-0002', args: { customer_id: 'C104211', sku: 'CHAIR-ERG', quantity: 2 }, result: 'ok' as const },
  { key: 'K-20261120-0003', args: { customer_id: 'C104211', sku: 'LAMP-LED', quantity: 1 }, result: 'unknown' as const },
];

/** Fabricate the example's ledger and operations in an initialized home (root: the repository). */
export function buildExampleHistory(home: string, root: string) {
  const m = loadManifest(join(root, EXAMPLE_MANIFEST));
  const h = new History(home, m.digest);
  try {
    h.startup('enforce');
    h.allow('lookup_customer', { customer_id: 'C104211' });
    const made = [];
    for (const o of ORDERS.slice(0, 2)) made.push(h.allow('create_order', { ...o.args, idempotency_key: o.key }, { operationId: o.key, result: o.result }));
    h.refuse('create_order', { customer_id: 'C104211', sku: 'DESK-STD', quantity: 500, idempotency_key: 'K-20261120-0009' }, 'argument_invalid');
    const o = ORDERS[2];
    made.push(h.allow('create_order', { ...o.args, idempotency_key: o.key }, { operationId: o.key, result: o.result }));
    return made;
  } finally {
    h.close();
  }
}

// The store contract: every store implementation (store/sqlite/, and any later one) runs all of
// these against a factory of fresh stores. A new store is done when this suite passes on it.
import { ledgerContract } from './ledger.js';
import { operationsContract } from './operations.js';
import { pinsContract } from './pins.js';
import { ratesContract } from './rates.js';
import { receiptsContract } from './receipts.js';
import { transactContract } from './transact.js';
import { approvalRequestsContract } from './approval-requests.js';
import type { StoreFactory } from './harness.js';

export type { StoreFactory, OpenedForTest } from './harness.js';

export function storeContract(name: string, open: StoreFactory): void {
  ledgerContract(name, open);
  operationsContract(name, open);
  receiptsContract(name, open);
  ratesContract(name, open);
  pinsContract(name, open);
  transactContract(name, open);
  approvalRequestsContract(name, open);
}

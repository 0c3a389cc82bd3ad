// The store contract against SQLite: a fresh home's two databases; the peer is a second
// connection to the same files, as a second gate on the same home opens them.
import { after } from 'node:test';
import { storeContract } from '../contract/index.js';
import { freshStore } from '../helpers.js';
import { openSqliteStore } from '../../../src/store/sqlite/store.js';
import type { Store } from '../../../src/store/ports.js';

const opened: Store[] = [];
after(() => opened.forEach((s) => s.close()));

storeContract('sqlite', async () => {
  const { store, paths } = freshStore();
  opened.push(store);
  return {
    store,
    peer: async () => {
      const s = openSqliteStore(paths);
      opened.push(s);
      return s;
    },
  };
});

// The PKCS#11 module is a shared library the gate loads and runs, with the PIN and the key's
// sessions in its hands: whoever can change the file (or replace it in its folder) runs code in
// the gate. So, as ssh-agent restricts the providers it loads, a module file is refused, named,
// unless it is a regular file owned by the user the gate runs as or by root, that no one else
// may write, in folders no one else may replace it in (a sticky folder such as /tmp is fine).
import { realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { ownedByReader } from './secret-file.js';

/** Why the module at `path` may not be loaded, or null; a missing file is left for load() to name. */
export function moduleFileRefusal(path: string): string | null {
  let real: string;
  let st;
  try {
    real = realpathSync(path);
    st = statSync(real);
  } catch {
    return null;
  }
  if (!st.isFile()) return `the PKCS#11 module ${path} is not a regular file`;
  if (!ownedByReader(st.uid)) return `the PKCS#11 module ${path} is owned by another user (uid ${st.uid}): whoever owns it runs code in the gate; refused`;
  if ((st.mode & 0o022) !== 0)
    return `the PKCS#11 module ${path} is writable by others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): whoever can write it runs code in the gate; refused`;
  for (const folder of new Set([dirname(path), dirname(real)])) {
    const d = statSync(folder, { throwIfNoEntry: false });
    if (d && (d.mode & 0o002) !== 0 && (d.mode & 0o1000) === 0) return `the PKCS#11 module ${path} is in a folder anyone may write (${folder}): it can be replaced; refused`;
  }
  return null;
}

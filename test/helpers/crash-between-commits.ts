// A process killed (SIGKILL) between the commits of two SQLite files of one transaction: ledger.db
// and the operations.db ATTACHed to it commit one after the other in WAL mode, each atomically,
// the pair not. The hook, preloaded (LD_PRELOAD) into the real binary, kills it at the first sync
// of operations.db's WAL that follows a sync of ledger.db's: the ledger's commit is durable, the
// operations store's never happens. Compiled with the machine's cc when a test asks for it.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './cli.js';

const SOURCE = String.raw`
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ledger_synced = 0;

static int ends_with(const char *s, const char *t) {
  size_t a = strlen(s), b = strlen(t);
  return a >= b && strcmp(s + a - b, t) == 0;
}

static void before_sync(int fd) {
  if (getenv("CRASH_BETWEEN_COMMITS") == NULL) return;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return;
  path[n] = 0;
  if (ends_with(path, "/ledger.db-wal")) ledger_synced = 1;
  else if (ends_with(path, "/operations.db-wal")) {
    if (ledger_synced) raise(SIGKILL);
  }
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  before_sync(fd);
  return real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int) = NULL;
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  before_sync(fd);
  return real(fd);
}
`;

/** The environment that preloads the hook; with `armed`, a commit of both files is cut between them. */
export function crashBetweenCommits(armed = true): Record<string, string> {
  const dir = tempDir('cloakpipe-crash-hook-');
  const src = join(dir, 'hook.c');
  const lib = join(dir, 'hook.so');
  writeFileSync(src, SOURCE);
  execFileSync('cc', ['-shared', '-fPIC', '-O1', '-o', lib, src, '-ldl']);
  return { LD_PRELOAD: lib, ...(armed ? { CRASH_BETWEEN_COMMITS: '1' } : {}) };
}

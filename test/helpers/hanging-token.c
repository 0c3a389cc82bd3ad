/* A hostile PKCS#11 token for tests: every call goes to the real module named by
   HANGING_TOKEN_MODULE (SoftHSM), but C_Sign, C_Login and C_Initialize wait, inside the module,
   for as long as the file HANGING_TOKEN_FILE.sign (.login, .init) exists: a token that stops answering mid-call,
   as a network HSM gone silent does; and it counts logins. Compiled by hanging-token.ts. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pkcs11.h"

static CK_FUNCTION_LIST list;
static CK_FUNCTION_LIST_PTR real;

static void wait_while_held(const char *what) {
  const char *base = getenv("HANGING_TOKEN_FILE");
  char path[4096];
  if (!base) return;
  snprintf(path, sizeof path, "%s.%s", base, what);
  while (access(path, F_OK) == 0) usleep(5000);
}

/* While HANGING_TOKEN_FILE.corrupt exists, a signature comes back with one bit flipped: a token
   that answers, but not with a signature of its key (a fault, a failover to another key). While
   HANGING_TOKEN_FILE.flaky exists, so does a signature of data holding the bytes that file holds:
   faults on some entries of a run, not on others. */
static int holds(const CK_BYTE *data, CK_ULONG n, const char *file) {
  char want[256];
  size_t k;
  CK_ULONG i;
  FILE *f = fopen(file, "r");
  if (!f) return 0;
  k = fread(want, 1, sizeof want, f);
  fclose(f);
  if (k == 0 || k > n) return 0;
  for (i = 0; i + k <= n; i++)
    if (memcmp(data + i, want, k) == 0) return 1;
  return 0;
}

/* While HANGING_TOKEN_FILE.signkey exists, C_Sign with the key whose CKA_LABEL that file holds
   waits inside the module: one key of the token (on a partition gone silent, say) stops
   answering while the others sign. Sessions signing with it, as their last C_SignInit set them. */
#define MAX_SESSIONS 256
static CK_SESSION_HANDLE held_sessions[MAX_SESSIONS];

static int key_held(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key) {
  const char *base = getenv("HANGING_TOKEN_FILE");
  char path[4096], want[256], label[256];
  size_t k;
  FILE *f;
  CK_ATTRIBUTE a = {CKA_LABEL, label, sizeof label};
  if (!base) return 0;
  snprintf(path, sizeof path, "%s.signkey", base);
  if (!(f = fopen(path, "r"))) return 0;
  k = fread(want, 1, sizeof want, f);
  fclose(f);
  if (real->C_GetAttributeValue(s, key, &a, 1) != CKR_OK) return 0;
  return a.ulValueLen == k && memcmp(label, want, k) == 0;
}

static void mark(CK_SESSION_HANDLE s, int held) {
  int i, free_at = -1;
  for (i = 0; i < MAX_SESSIONS; i++) {
    if (held_sessions[i] == s) {
      if (!held) held_sessions[i] = 0;
      return;
    }
    if (held_sessions[i] == 0 && free_at < 0) free_at = i;
  }
  if (held && free_at >= 0) held_sessions[free_at] = s;
}

static int marked(CK_SESSION_HANDLE s) {
  int i;
  for (i = 0; i < MAX_SESSIONS; i++)
    if (s != 0 && held_sessions[i] == s) return 1;
  return 0;
}

static CK_RV held_sign_init(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE key) {
  mark(s, key_held(s, key));
  return real->C_SignInit(s, m, key);
}

static CK_RV held_sign(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG n, CK_BYTE_PTR sig, CK_ULONG_PTR len) {
  const char *base = getenv("HANGING_TOKEN_FILE");
  char path[4096];
  CK_RV rv;
  wait_while_held("sign");
  if (marked(s)) wait_while_held("signkey");
  rv = real->C_Sign(s, data, n, sig, len);
  if (rv == CKR_OK && sig && base) {
    snprintf(path, sizeof path, "%s.corrupt", base);
    if (access(path, F_OK) == 0) sig[0] ^= 1;
    snprintf(path, sizeof path, "%s.flaky", base);
    if (holds(data, n, path)) sig[0] ^= 1;
  }
  return rv;
}

static CK_RV held_initialize(CK_VOID_PTR args) {
  wait_while_held("init");
  return real->C_Initialize(args);
}

/* Each login's answer is appended to HANGING_TOKEN_FILE.logins (its CKR value, never the PIN):
   what an HSM's own log would show of the attempts counting towards locking the user PIN. */
static CK_RV held_login(CK_SESSION_HANDLE s, CK_USER_TYPE who, CK_UTF8CHAR_PTR pin, CK_ULONG n) {
  const char *base = getenv("HANGING_TOKEN_FILE");
  char path[4096];
  CK_RV rv;
  FILE *log;
  wait_while_held("login");
  rv = real->C_Login(s, who, pin, n);
  if (base) {
    snprintf(path, sizeof path, "%s.logins", base);
    if ((log = fopen(path, "a"))) {
      fprintf(log, "0x%lx\n", (unsigned long)rv);
      fclose(log);
    }
  }
  return rv;
}

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR out) {
  if (!real) {
    const char *path = getenv("HANGING_TOKEN_MODULE");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    CK_RV (*get)(CK_FUNCTION_LIST_PTR_PTR);
    CK_RV rv;
    if (!h) return CKR_GENERAL_ERROR;
    get = (CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR))dlsym(h, "C_GetFunctionList");
    if (!get) return CKR_GENERAL_ERROR;
    rv = get(&real);
    if (rv != CKR_OK) return rv;
    memcpy(&list, real, sizeof list);
    list.C_Sign = held_sign;
    list.C_SignInit = held_sign_init;
    list.C_Login = held_login;
    list.C_Initialize = held_initialize;
  }
  *out = &list;
  return CKR_OK;
}

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** A PKCS#11 module in front of SoftHSM2 that fails slowly on demand, as a network HSM's client may. */
export interface SlowFailingModule {
  /** The shim's path: give it as the module to load. */
  readonly modulePath: string;
  /**
   * From now on C_Initialize, C_GetSlotList, C_OpenSession, C_SignInit, C_Sign, C_EncryptInit and
   * C_Encrypt sleep `delayMs`, then fail (CKR_DEVICE_ERROR): the reconnect's probe, the signing path
   * and the DES3 encryption all meet it.
   */
  failSlowly(delayMs: number): void;
  /** How many calls to `name` (e.g. C_SignInit) failed slowly so far. */
  failedCalls(name: string): number;
  /** Every call passes through to SoftHSM2 again. */
  recover(): void;
  /** Deletes the shim; call it after its last user is closed. */
  remove(): void;
}

const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

/**
 * Compiles (gcc) a shim that forwards every call to SoftHSM2 except C_Initialize, C_GetSlotList,
 * C_OpenSession, C_SignInit, C_Sign, C_EncryptInit and C_Encrypt while a control file exists: those
 * sleep the milliseconds the file holds and fail. A network HSM's client library may block this way
 * while its HSM is unreachable. Each call that failed so is written to a log file (`failedCalls`).
 */
export function buildSlowFailingModule(): SlowFailingModule {
  const directory = mkdtempSync(join(tmpdir(), 'hsm-slow-module-'));
  const source = join(directory, 'slow-failing-module.c');
  const modulePath = join(directory, 'libslowfailing.so');
  const controlFile = join(directory, 'fail-slowly');
  const callLog = join(directory, 'failed-calls');
  writeFileSync(source, SHIM_SOURCE);
  const includes = join(dirname(require.resolve('pkcs11js/package.json')), 'includes');
  execFileSync(
    'gcc',
    [
      '-shared',
      '-fPIC',
      '-O1',
      `-I${includes}`,
      `-DREAL_MODULE="${SOFTHSM_MODULE}"`,
      `-DCONTROL_FILE="${controlFile}"`,
      `-DCALL_LOG="${callLog}"`,
      '-o',
      modulePath,
      source,
      '-ldl',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return {
    modulePath,
    failSlowly: (delayMs) => writeFileSync(controlFile, String(delayMs)),
    failedCalls: (name) =>
      existsSync(callLog)
        ? readFileSync(callLog, 'utf8')
            .split('\n')
            .filter((line) => line === name).length
        : 0,
    recover: () => rmSync(controlFile, { force: true }),
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

const SHIM_SOURCE = String.raw`
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
#define CK_PTR *
#define CK_DEFINE_FUNCTION(returnType, name) returnType name
#define CK_DECLARE_FUNCTION(returnType, name) returnType name
#define CK_DECLARE_FUNCTION_POINTER(returnType, name) returnType (* name)
#define CK_CALLBACK_FUNCTION(returnType, name) returnType (* name)
#define NULL_PTR 0
#include <pkcs11/pkcs11.h>

static CK_FUNCTION_LIST shim;
static CK_FUNCTION_LIST_PTR real = NULL_PTR;

/* The milliseconds a failing call sleeps, or -1 when the control file is absent (pass through). */
static int failing_delay_ms(void) {
  FILE *file = fopen(CONTROL_FILE, "r");
  if (file == NULL) return -1;
  int ms = 0;
  if (fscanf(file, "%d", &ms) != 1) ms = 0;
  fclose(file);
  return ms;
}

static CK_RV fail_slowly(const char *call, int ms) {
  usleep((useconds_t)ms * 1000);
  FILE *log = fopen(CALL_LOG, "a");
  if (log != NULL) {
    fprintf(log, "%s\n", call);
    fclose(log);
  }
  return CKR_DEVICE_ERROR;
}

/* The body of every wrapped call: fail slowly while the control file exists, else pass the call through. */
#define FAIL_SLOWLY_OR_FORWARD(name, args) \
  { \
    int ms = failing_delay_ms(); \
    return ms >= 0 ? fail_slowly(#name, ms) : real->name args; \
  }

static CK_RV shim_C_Initialize(CK_VOID_PTR args) FAIL_SLOWLY_OR_FORWARD(C_Initialize, (args))

static CK_RV shim_C_GetSlotList(CK_BBOOL present, CK_SLOT_ID_PTR list, CK_ULONG_PTR count) FAIL_SLOWLY_OR_FORWARD(C_GetSlotList, (present, list, count))

static CK_RV shim_C_OpenSession(CK_SLOT_ID slot, CK_FLAGS flags, CK_VOID_PTR application, CK_NOTIFY notify, CK_SESSION_HANDLE_PTR session) FAIL_SLOWLY_OR_FORWARD(C_OpenSession, (slot, flags, application, notify, session))

static CK_RV shim_C_SignInit(CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key) FAIL_SLOWLY_OR_FORWARD(C_SignInit, (session, mechanism, key))

static CK_RV shim_C_Sign(CK_SESSION_HANDLE session, CK_BYTE_PTR data, CK_ULONG length, CK_BYTE_PTR signature, CK_ULONG_PTR signatureLength) FAIL_SLOWLY_OR_FORWARD(C_Sign, (session, data, length, signature, signatureLength))

static CK_RV shim_C_EncryptInit(CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key) FAIL_SLOWLY_OR_FORWARD(C_EncryptInit, (session, mechanism, key))

static CK_RV shim_C_Encrypt(CK_SESSION_HANDLE session, CK_BYTE_PTR data, CK_ULONG length, CK_BYTE_PTR encrypted, CK_ULONG_PTR encryptedLength) FAIL_SLOWLY_OR_FORWARD(C_Encrypt, (session, data, length, encrypted, encryptedLength))

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list) {
  if (real == NULL_PTR) {
    void *library = dlopen(REAL_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return CKR_GENERAL_ERROR;
    CK_C_GetFunctionList get = (CK_C_GetFunctionList)dlsym(library, "C_GetFunctionList");
    if (get == NULL || get(&real) != CKR_OK) return CKR_GENERAL_ERROR;
    shim = *real;
    shim.C_Initialize = shim_C_Initialize;
    shim.C_GetSlotList = shim_C_GetSlotList;
    shim.C_OpenSession = shim_C_OpenSession;
    shim.C_SignInit = shim_C_SignInit;
    shim.C_Sign = shim_C_Sign;
    shim.C_EncryptInit = shim_C_EncryptInit;
    shim.C_Encrypt = shim_C_Encrypt;
  }
  *list = &shim;
  return CKR_OK;
}
`;

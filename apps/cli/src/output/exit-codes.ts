import type { SandboxErrorCode } from "@sbox/core";

/**
 * Exit codes of `sbox`, by error class. `run` and `exec` pass the command's own exit code through
 * instead (a command ended by a signal gives 128 + the signal number, as in a shell).
 */
export const EXIT_CODES = {
  ok: 0,
  /** Any error without a more specific class (Provider, AllProvidersFailed, ...). */
  generic: 1,
  /** The command line is wrong: unknown command or option, missing argument, refused confirmation. */
  usage: 2,
  notFound: 3,
  unauthorized: 4,
  /** An sbox operation timed out (a provider call, a transition). */
  timeout: 5,
  notSupported: 6,
  validation: 7,
  /** Conflict or InvalidState: the sandbox is busy or in the wrong state for the operation. */
  conflict: 8,
  quotaExceeded: 9,
  /** `run`/`exec --timeout` killed the command (the convention of coreutils `timeout`). */
  commandTimeout: 124,
  /** Interrupted by Ctrl-C (SIGINT), after cleaning up. */
  interrupted: 130,
  /** Ended by SIGTERM, after cleaning up. */
  terminated: 143,
} as const;

const BY_CODE: Partial<Record<SandboxErrorCode, number>> = {
  NotFound: EXIT_CODES.notFound,
  Unauthorized: EXIT_CODES.unauthorized,
  Timeout: EXIT_CODES.timeout,
  NotSupported: EXIT_CODES.notSupported,
  Validation: EXIT_CODES.validation,
  Conflict: EXIT_CODES.conflict,
  InvalidState: EXIT_CODES.conflict,
  QuotaExceeded: EXIT_CODES.quotaExceeded,
  Aborted: EXIT_CODES.interrupted,
};

/** The exit code for an error of the given code. */
export function exitCodeForErrorCode(code: SandboxErrorCode): number {
  return BY_CODE[code] ?? EXIT_CODES.generic;
}

/** The table printed by `sbox --help`. */
export const EXIT_CODE_HELP: readonly (readonly [number, string])[] = [
  [0, "success"],
  [1, "error without a more specific class (Provider, AllProvidersFailed)"],
  [2, "usage: bad command line, unknown option, missing argument, confirmation refused"],
  [3, "NotFound: no such sandbox, file or process"],
  [4, "Unauthorized: missing or rejected credentials"],
  [5, "Timeout: an sbox operation timed out"],
  [6, "NotSupported: the provider lacks the capability"],
  [7, "Validation: bad input rejected by sbox or the provider"],
  [8, "Conflict / InvalidState: busy, or wrong state for the operation"],
  [9, "QuotaExceeded"],
  [124, "run/exec: the command exceeded --timeout and was killed"],
  [130, "interrupted by Ctrl-C (after cleaning up); 143 for SIGTERM"],
  [-1, "run/exec: otherwise the command's own exit code (128+N when killed by signal N)"],
];

import { SandboxError } from "../errors/sandbox-error.js";

// Linux signal numbers (sandboxes run Linux); a static table keeps the core free of node: imports.
const SIGNALS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGCHLD: 17,
  SIGCONT: 18,
  SIGSTOP: 19,
  SIGTSTP: 20,
  SIGTTIN: 21,
  SIGTTOU: 22,
  SIGURG: 23,
  SIGXCPU: 24,
  SIGXFSZ: 25,
  SIGVTALRM: 26,
  SIGPROF: 27,
  SIGWINCH: 28,
  SIGIO: 29,
  SIGPWR: 30,
  SIGSYS: 31,
};

/** Normalizes `"kill"`, `"KILL"`, `"SIGKILL"` to `"SIGKILL"`; unknown names are a `Validation` error. */
export function normalizeSignal(signal: string | undefined, fallback: string): string {
  const raw = (signal ?? fallback).toUpperCase();
  const name = raw.startsWith("SIG") ? raw : `SIG${raw}`;
  if (SIGNALS[name] === undefined) {
    throw new SandboxError("Validation", `unknown signal ${JSON.stringify(signal)}`, { retryable: false });
  }
  return name;
}

/** The conventional exit code of a process ended by `signal`: 128 + its number. */
export function exitCodeForSignal(signal: string): number {
  return 128 + (SIGNALS[signal] ?? 9);
}

/** The number of a signal name, e.g. "SIGTERM" -> 15 (Linux numbering); `undefined` for an unknown name. */
export function signalNumber(signal: string): number | undefined {
  return SIGNALS[signal];
}

/** The signal name for a number, e.g. 15 -> "SIGTERM". */
export function signalName(signal: number): string | undefined {
  return Object.keys(SIGNALS).find((name) => SIGNALS[name] === signal);
}

import { type DriverExit, exitCodeForSignal } from "@sbox/core/spec";

// How E2B's daemon (Go) spells the signal that ended a process: "signal: killed", "signal: terminated"...
const GO_SIGNAL_TEXT: Readonly<Record<string, string>> = {
  hangup: "SIGHUP",
  interrupt: "SIGINT",
  quit: "SIGQUIT",
  "illegal instruction": "SIGILL",
  "trace/breakpoint trap": "SIGTRAP",
  aborted: "SIGABRT",
  "bus error": "SIGBUS",
  "floating point exception": "SIGFPE",
  killed: "SIGKILL",
  "user defined signal 1": "SIGUSR1",
  "segmentation fault": "SIGSEGV",
  "user defined signal 2": "SIGUSR2",
  "broken pipe": "SIGPIPE",
  "alarm clock": "SIGALRM",
  terminated: "SIGTERM",
};

/**
 * The exit of a command from what the SDK reports: an exit code, and for a process ended by a signal the
 * daemon's exit code -1 with an error text such as `"signal: killed"`. Such an exit becomes the signal's
 * name with the conventional code 128 + its number.
 */
export function exitFromE2B(exitCode: number, error: string | undefined): DriverExit {
  if (exitCode >= 0) return { exitCode };
  const text = /signal: ([^(]+?)(?: \(core dumped\))?$/.exec(error ?? "")?.[1];
  const known = text ? GO_SIGNAL_TEXT[text] : undefined;
  if (known) return { exitCode: exitCodeForSignal(known), signal: known };
  const numbered = /^signal (\d+)$/.exec(text ?? "");
  if (numbered?.[1]) return { exitCode: 128 + Number(numbered[1]) };
  return { exitCode: 128 + 9, signal: "SIGKILL" };
}

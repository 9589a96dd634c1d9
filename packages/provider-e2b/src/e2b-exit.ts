import type { DriverExit } from "@sbox/core/spec";

// How E2B's daemon (Go) spells the signal that ended a process: "signal: killed", "signal: terminated"...
const GO_SIGNAL_TEXT: Readonly<Record<string, [string, number]>> = {
  hangup: ["SIGHUP", 1],
  interrupt: ["SIGINT", 2],
  quit: ["SIGQUIT", 3],
  "illegal instruction": ["SIGILL", 4],
  "trace/breakpoint trap": ["SIGTRAP", 5],
  aborted: ["SIGABRT", 6],
  "bus error": ["SIGBUS", 7],
  "floating point exception": ["SIGFPE", 8],
  killed: ["SIGKILL", 9],
  "user defined signal 1": ["SIGUSR1", 10],
  "segmentation fault": ["SIGSEGV", 11],
  "user defined signal 2": ["SIGUSR2", 12],
  "broken pipe": ["SIGPIPE", 13],
  "alarm clock": ["SIGALRM", 14],
  terminated: ["SIGTERM", 15],
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
  if (known) return { exitCode: 128 + known[1], signal: known[0] };
  const numbered = /^signal (\d+)$/.exec(text ?? "");
  if (numbered?.[1]) return { exitCode: 128 + Number(numbered[1]) };
  return { exitCode: 128 + 9, signal: "SIGKILL" };
}

/**
 * How envd (Go's os/exec) describes the end of a process in `ProcessEvent.EndEvent`: `exit_code` is the
 * exit status, or -1 for a signal; `status` and `error` read "exit status 3" or "signal: killed".
 */

const SIGNAL_TEXT: Readonly<Record<string, string>> = {
  SIGHUP: "hangup",
  SIGINT: "interrupt",
  SIGQUIT: "quit",
  SIGILL: "illegal instruction",
  SIGTRAP: "trace/breakpoint trap",
  SIGABRT: "aborted",
  SIGBUS: "bus error",
  SIGFPE: "floating point exception",
  SIGKILL: "killed",
  SIGUSR1: "user defined signal 1",
  SIGSEGV: "segmentation fault",
  SIGUSR2: "user defined signal 2",
  SIGPIPE: "broken pipe",
  SIGALRM: "alarm clock",
  SIGTERM: "terminated",
};

/** The EndEvent fields for a process that exited with `code` or was ended by `signal`. */
export function endEventOf(code: number | undefined, signal: string | undefined): Record<string, unknown> {
  if (signal) {
    const text = `signal: ${SIGNAL_TEXT[signal] ?? signal}`;
    return { exitCode: -1, exited: false, status: text, error: text };
  }
  const status = `exit status ${code ?? 0}`;
  return code === 0 || code === undefined
    ? { exitCode: 0, exited: true, status }
    : { exitCode: code, exited: true, status, error: status };
}

import { constants } from "node:os";
import { EXIT_CODES } from "./output/exit-codes.js";

/** The signals that end an `sbox` command politely (cleaning up first). */
export type InterruptSignal = "SIGINT" | "SIGTERM" | "SIGHUP";

/** The exit code after being interrupted by a signal: 128 + its number. */
export function exitCodeForSignal(signal: string): number {
  if (signal === "SIGINT") return EXIT_CODES.interrupted;
  if (signal === "SIGTERM") return EXIT_CODES.terminated;
  const number = (constants.signals as Record<string, number | undefined>)[signal];
  return number === undefined ? EXIT_CODES.generic : 128 + number;
}

/**
 * Catches SIGINT/SIGTERM/SIGHUP while a command runs: the first one calls `onInterrupt` (which aborts
 * work and lets the command clean up), a second one exits at once after `onForce`. Returns an uninstaller.
 */
export function trapInterrupts(
  onInterrupt: (signal: InterruptSignal) => void,
  onForce?: (signal: InterruptSignal) => void,
): () => void {
  let interrupted = false;
  const handler = (signal: InterruptSignal): void => {
    if (interrupted) {
      onForce?.(signal);
      process.exit(exitCodeForSignal(signal));
    }
    interrupted = true;
    onInterrupt(signal);
  };
  const signals: InterruptSignal[] = ["SIGINT", "SIGTERM", "SIGHUP"];
  for (const signal of signals) process.on(signal, handler);
  return () => {
    for (const signal of signals) process.off(signal, handler);
  };
}

/** The part of a writable stream the CLI's output helpers use; `process.stdout`/`stderr` fit. */
export interface TerminalStream {
  write(chunk: string | Uint8Array): boolean;
  readonly isTTY?: boolean | undefined;
  readonly columns?: number | undefined;
}

/** Erases the current terminal line and returns the cursor to its start. */
export const CLEAR_LINE = "\r\x1b[2K";

/** The process surface the CLI runs against; `process` in the binary. */
export interface CliIo {
  readonly stdin: NodeJS.ReadableStream & {
    readonly isTTY?: boolean | undefined;
    setRawMode?(mode: boolean): unknown;
  };
  readonly stdout: NodeJS.WritableStream & {
    readonly isTTY?: boolean | undefined;
    readonly columns?: number | undefined;
    readonly rows?: number | undefined;
  };
  readonly stderr: NodeJS.WritableStream & {
    readonly isTTY?: boolean | undefined;
    readonly columns?: number | undefined;
  };
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
}

/** The real process streams and environment. */
export function processIo(): CliIo {
  return {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
  };
}

/**
 * runc's words when the program of an exec could not be started, e.g. `OCI runtime exec failed: exec
 * failed: unable to start container process: exec: "nosuchcommand": executable file not found in $PATH:
 * unknown`. They name runc and the engine, which the user never called; the command's result says what
 * a shell says instead.
 */
export interface OciStartFailure {
  /** What goes to stderr, one line. */
  readonly message: string;
  /** 127 when there is no such program, 126 when it cannot run. */
  readonly exitCode: 126 | 127;
}

const PROGRAM = /exec: "((?:[^"\\]|\\.)*)":/;

/** The shell-like report of a start failure runc printed, or undefined when `text` is something else. */
export function ociStartFailure(text: string): OciStartFailure | undefined {
  if (!text.startsWith("OCI runtime exec failed")) return undefined;
  const quoted = PROGRAM.exec(text)?.[1];
  if (quoted === undefined) return undefined;
  let program: string;
  try {
    program = JSON.parse(`"${quoted}"`) as string;
  } catch {
    program = quoted;
  }
  if (text.includes("executable file not found"))
    return { message: `${program}: command not found\n`, exitCode: 127 };
  if (text.includes("no such file or directory"))
    return { message: `${program}: No such file or directory\n`, exitCode: 127 };
  if (text.includes("is a directory")) return { message: `${program}: Is a directory\n`, exitCode: 126 };
  if (text.includes("permission denied"))
    return { message: `${program}: Permission denied\n`, exitCode: 126 };
  return undefined;
}

import type { SandboxErrorCode } from "../errors/error-codes.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { ShellResult } from "./emulation-context.js";

/**
 * Exit codes the file scripts use to say what went wrong. Tools exit 1 (or 126/127 when missing), so these
 * values cannot be produced by accident.
 */
export const FILE_EXIT = {
  notFound: 44,
  isDirectory: 45,
  exists: 46,
  notEmpty: 47,
  notDirectory: 48,
  notRegular: 49,
  denied: 50,
  parentNotDirectory: 51,
  tempVanished: 52,
  missingTool: 53,
  destinationParentMissing: 54,
} as const;

/**
 * A shell function, defined at the top of every file script: called when a path is absent, it tells a
 * missing path (exit 44) from one that cannot be looked at (exit 50).
 */
export const GONE_FUNCTION: string = `sbox_gone() {
  case $(LC_ALL=C stat -c %s "$1" 2>&1 >/dev/null) in *ermission*) exit ${FILE_EXIT.denied};; esac
  exit ${FILE_EXIT.notFound}
}
`;

const decoder = new TextDecoder();

/** The last part of stderr, for error messages. */
export function stderrTail(result: ShellResult, max = 600): string {
  const text = decoder.decode(result.stderr).trim();
  return text.length > max ? `...${text.slice(-max)}` : text;
}

/** Options for {@link fileError}. */
export interface FileErrorContext {
  provider: string;
  /** `"files.read"`, `"files.write"`... */
  operation: string;
  path: string;
  /** Overrides of the default messages per exit code. */
  messages?: Partial<Record<number, string>> | undefined;
}

const DEFAULTS: Record<number, [SandboxErrorCode, string]> = {
  [FILE_EXIT.notFound]: ["NotFound", "no such file or directory"],
  [FILE_EXIT.isDirectory]: ["Validation", "is a directory"],
  [FILE_EXIT.exists]: ["Conflict", "already exists"],
  [FILE_EXIT.notEmpty]: ["Conflict", "directory not empty (use recursive)"],
  [FILE_EXIT.notDirectory]: ["Validation", "not a directory"],
  [FILE_EXIT.notRegular]: ["Validation", "not a regular file"],
  [FILE_EXIT.denied]: ["Unauthorized", "permission denied"],
  [FILE_EXIT.parentNotDirectory]: ["Validation", "a parent path exists and is not a directory"],
  [FILE_EXIT.tempVanished]: ["Provider", "the temporary file of the transfer disappeared"],
  [FILE_EXIT.missingTool]: ["NotSupported", "a required tool is missing in the sandbox"],
  [FILE_EXIT.destinationParentMissing]: ["NotFound", "the destination directory does not exist"],
};

/** Turns a failed file script into the `SandboxError` its exit code (or, failing that, its stderr) names. */
export function fileError(context: FileErrorContext, result: ShellResult): SandboxError {
  const tail = stderrTail(result);
  const known = DEFAULTS[result.exitCode];
  const where = `${context.operation} ${JSON.stringify(context.path)}`;
  if (known) {
    const message = context.messages?.[result.exitCode] ?? known[1];
    return new SandboxError(known[0], `${where}: ${message}${tail ? ` (${tail})` : ""}`, {
      provider: context.provider,
      retryable: false,
    });
  }
  let code: SandboxErrorCode = "Provider";
  if (/no space left/i.test(tail)) code = "QuotaExceeded";
  else if (/permission denied|operation not permitted/i.test(tail)) code = "Unauthorized";
  return new SandboxError(
    code,
    `${where}: failed with exit code ${result.exitCode}${tail ? `: ${tail}` : " and no error output"}`,
    { provider: context.provider, retryable: false },
  );
}

import type { CliContext } from "../cli-context.js";
import { exitCodeForError, formatErrorLine } from "../output/error-line.js";

/** The outcome of an operation on one of several sandboxes. */
export interface SandboxOutcome {
  id: string;
  ok: boolean;
  error?: { code: string; message: string } | undefined;
}

/**
 * Applies `operation` to every id in turn (it connects itself, so it can treat absence its own way). A failure on one does not stop the others: each failure is
 * printed as its error line, and the exit code is that of the first failure (0 when all succeeded).
 */
export async function forEachSandbox(
  context: CliContext,
  ids: readonly string[],
  verb: string,
  operation: (id: string) => Promise<void>,
): Promise<{ code: number; outcomes: SandboxOutcome[] }> {
  let code = 0;
  const outcomes: SandboxOutcome[] = [];
  for (const id of ids) {
    try {
      await context.waitFor(`${verb} ${id}`, () => operation(id));
      outcomes.push({ id, ok: true });
      if (!context.json) context.print(`${id}\n`);
    } catch (error) {
      if (code === 0) code = exitCodeForError(error);
      const line = formatErrorLine(error, { colours: context.err, debug: context.debug });
      context.io.stderr.write(line);
      const sandboxError = error as { code?: unknown; message?: unknown };
      outcomes.push({
        id,
        ok: false,
        error: {
          code: String(sandboxError.code ?? "Provider"),
          message: String(sandboxError.message ?? error),
        },
      });
    }
  }
  if (context.json) context.printJson(outcomes);
  return { code, outcomes };
}

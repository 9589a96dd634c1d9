import { createInterface } from "node:readline";
import type { CliIo } from "./cli-io.js";

/** Asks a yes/no question on the terminal (stderr); true only for an explicit y/yes. */
export async function confirm(io: CliIo, question: string): Promise<boolean> {
  const readline = createInterface({ input: io.stdin, output: io.stderr, terminal: io.stdin.isTTY === true });
  try {
    const answer = await new Promise<string>((resolve) => {
      readline.question(`${question} [y/N] `, resolve);
      readline.once("close", () => resolve(""));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    readline.close();
  }
}

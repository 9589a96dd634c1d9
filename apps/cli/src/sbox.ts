import { runCli } from "./cli.js";

function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.writableLength === 0) return resolve();
    stream.write("", () => resolve());
  });
}

// The binary: run, flush what was written, and exit with the code even if a provider left a socket or a
// timer behind (a CLI must not hang after its work is done).
const code = await runCli(process.argv.slice(2));
await Promise.all([flush(process.stdout), flush(process.stderr)]);
process.exit(code);

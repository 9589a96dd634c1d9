/**
 * `@sbox/cli`: the `sbox` command. The binary is `sbox`; `runCli` runs one invocation in-process (for
 * embedding sbox commands in other tools) and resolves with the exit code.
 */
export { runCli } from "./cli.js";
export type { CliIo } from "./cli-io.js";
export { EXIT_CODES } from "./output/exit-codes.js";

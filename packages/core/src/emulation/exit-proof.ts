import { randomHex } from "./random-hex.js";

/**
 * Exit codes that other processes of the sandbox cannot forge (E3, E4). Every process there runs as the
 * same user, so any file the supervisor can write they can write too. Instead, the client draws two random
 * tokens per bit of the 8-bit exit status and hands them to the supervisor only, through the stdin of the
 * exec that starts it (never a command line, an environment or a file). When the command ends the supervisor
 * creates an empty file named `x.<code>.<token of bit 0>...<token of bit 7>`, picking per bit the token of
 * the bit's value. Seeing that name tells a forger nothing about the tokens of the other values, so it cannot
 * name another code; rewriting files changes no name; and the client accepts only a name it can check.
 * What remains possible is destroying the record (deleting or renaming it): that is reported as an error,
 * never as a different exit code.
 */

/** Bits of an exit status (0..255). */
const BITS = 8;
/** Hex digits per token: 64 random bits. */
const TOKEN_HEX = 16;
/** The prefix of a proof's file name inside a run directory. */
export const PROOF_PREFIX = "x.";
/** Most proof names one poll reports; a sandbox that makes more only delays its own commands. */
export const MAX_PROOF_NAMES = 16;

/** The tokens of one run, kept by the client that started it. */
export interface ExitTokens {
  /** `tokens[bit][value]`. */
  readonly tokens: readonly (readonly [string, string])[];
}

/** Draws fresh tokens for one run. */
export function newExitTokens(): ExitTokens {
  return {
    tokens: Array.from({ length: BITS }, () => [randomHex(TOKEN_HEX / 2), randomHex(TOKEN_HEX / 2)] as const),
  };
}

/** The line the supervisor reads on its stdin: the tokens in bit order, value 0 first. */
export function tokenLine(tokens: ExitTokens): string {
  return tokens.tokens.map(([zero, one]) => `${zero} ${one}`).join(" ");
}

/**
 * Supervisor shell text, run after `wait` left the status in `$c`: with the token line in `$k`, creates the
 * proof in `$d` (builtins only, so the tokens appear in no process's arguments). Without tokens it does
 * nothing.
 */
export const WRITE_PROOF_SCRIPT: string = [
  'if [ -n "$k" ]; then',
  "  set -- $k; p=; i=0",
  `  while [ $i -lt ${BITS} ]; do eval "w=\\\${$((2 * i + ((c >> i) & 1) + 1))}"; p=$p$w; i=$((i + 1)); done`,
  `  : > "$d/${PROOF_PREFIX}$c.$p"`,
  "fi",
].join("\n");

/** The exit status a proof name proves with these tokens, or undefined when it proves nothing. */
export function provenExitCode(tokens: ExitTokens, name: string): number | undefined {
  const match = /^x\.([0-9]{1,3})\.([0-9a-f]+)$/.exec(name);
  if (!match) return undefined;
  const code = Number(match[1]);
  const proof = match[2]!;
  if (code > 255 || proof.length !== BITS * TOKEN_HEX) return undefined;
  for (let bit = 0; bit < BITS; bit++) {
    const expected = tokens.tokens[bit]![(code >> bit) & 1];
    if (proof.slice(bit * TOKEN_HEX, (bit + 1) * TOKEN_HEX) !== expected) return undefined;
  }
  return code;
}

import { readFileSync } from "node:fs";

/** The version of `@sbox/cli`, read from its package.json (one directory above the built files). */
export function cliVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version?: unknown;
    };
    return typeof manifest.version === "string" ? manifest.version : "unknown";
  } catch {
    return "unknown";
  }
}

import { homedir } from "node:os";
import { join } from "node:path";

/** The directory sbox keeps local state in: `$SBOX_HOME`, or `~/.sbox`. */
export function sboxHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.SBOX_HOME;
  return configured && configured.length > 0 ? configured : join(homedir(), ".sbox");
}

/** Where `sqliteStore()` keeps its database when no path is given: `$SBOX_HOME/manager.db`. */
export function defaultSqlitePath(env: NodeJS.ProcessEnv = process.env): string {
  return join(sboxHome(env), "manager.db");
}

/**
 * Starts a throwaway PostgreSQL cluster unless `SBOX_TEST_POSTGRES_URL` names one, and bundles the
 * worker script that the cross-process tests fork. Under `CI=true` a PostgreSQL that cannot be started
 * fails the run instead of skipping its tests.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import type { TestProject } from "vitest/node";

const here = fileURLToPath(new URL(".", import.meta.url));
const scripts = fileURLToPath(new URL("../scripts/", import.meta.url));

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the test PostgreSQL server, or "" when none could be started outside CI. */
    postgresUrl: string;
    /** Why there is no PostgreSQL (for the skip message). */
    postgresMissing: string;
    /** Path of the bundled worker script (test/worker.ts). */
    workerScript: string;
  }
}

const sources: Record<string, string> = {
  "@sbox/core/spec": fileURLToPath(new URL("../../core/src/spec/index.ts", import.meta.url)),
  "@sbox/core": fileURLToPath(new URL("../../core/src/index.ts", import.meta.url)),
  "@sbox/provider-local": fileURLToPath(new URL("../../provider-local/src/index.ts", import.meta.url)),
};

/** Resolves workspace packages to their sources: the worker runs the same code as the tests. */
const workspaceSources: Plugin = {
  name: "workspace-sources",
  setup(builder) {
    builder.onResolve({ filter: /^@sbox\/(core|core\/spec|provider-local)$/ }, (args) => ({
      path: sources[args.path]!,
    }));
  },
};

export default async function setup(project: TestProject): Promise<() => void> {
  const workerScript = fileURLToPath(new URL("../.sbox-test/worker.mjs", import.meta.url));
  await build({
    entryPoints: [`${here}worker.ts`],
    outfile: workerScript,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: ["better-sqlite3", "pg"],
    plugins: [workspaceSources],
    logLevel: "error",
  });
  project.provide("workerScript", workerScript);

  let url = process.env.SBOX_TEST_POSTGRES_URL ?? "";
  let dir: string | undefined;
  let missing = "";
  if (!url) {
    try {
      const out = execFileSync("bash", [`${scripts}start-postgres.sh`, "--owner-pid", String(process.pid)], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
      url = /SBOX_TEST_POSTGRES_URL='([^']+)'/.exec(out)?.[1] ?? "";
      dir = /SBOX_TEST_POSTGRES_DIR='([^']+)'/.exec(out)?.[1];
      if (!url) throw new Error(`start-postgres.sh printed no URL: ${out}`);
    } catch (error) {
      if (process.env.CI === "true") throw error;
      missing = `PostgreSQL could not be started: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
    }
  }
  project.provide("postgresUrl", url);
  project.provide("postgresMissing", missing);
  return () => {
    if (dir) execFileSync("bash", [`${scripts}stop-postgres.sh`, dir], { stdio: "ignore" });
  };
}

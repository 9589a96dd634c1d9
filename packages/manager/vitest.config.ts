import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const core = (path: string): string => fileURLToPath(new URL(`../core/src/${path}`, import.meta.url));
const local = fileURLToPath(new URL("../provider-local/src/index.ts", import.meta.url));
const docker = fileURLToPath(new URL("../provider-docker/src/index.ts", import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the workspace sources, so they never see a stale build.
    alias: [
      { find: /^@sbox\/core\/spec$/, replacement: core("spec/index.ts") },
      { find: /^@sbox\/core$/, replacement: core("index.ts") },
      { find: /^@sbox\/provider-local$/, replacement: local },
      { find: /^@sbox\/provider-docker$/, replacement: docker },
    ],
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});

import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const sibling = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the workspace sources, so they do not depend on fresh builds of other dists.
    alias: [
      { find: /^@sbox\/core\/spec$/, replacement: sibling("core/src/spec/index.ts") },
      { find: /^@sbox\/core$/, replacement: sibling("core/src/index.ts") },
      { find: /^@sbox\/conformance\/vitest$/, replacement: sibling("conformance/src/vitest.ts") },
      { find: /^@sbox\/conformance$/, replacement: sibling("conformance/src/index.ts") },
      { find: /^@sbox\/emulators\/daytona$/, replacement: sibling("emulators/src/daytona/index.ts") },
      { find: /^@sbox\/emulators$/, replacement: sibling("emulators/src/index.ts") },
      { find: /^@sbox\/provider-local$/, replacement: sibling("provider-local/src/index.ts") },
      { find: /^@sbox\/provider-docker$/, replacement: sibling("provider-docker/src/index.ts") },
    ],
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});

import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", vitest: "src/vitest.ts" },
  format: ["esm", "cjs"],
  // One copy of the shared code for both entry points, in CommonJS as in ESM.
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  external: ["vitest", "@sbox/core"],
});

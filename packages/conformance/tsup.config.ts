import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", vitest: "src/vitest.ts" },
  format: ["esm"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  external: ["vitest", "@sbox/core"],
});

import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "spec/index": "src/spec/index.ts" },
  format: ["esm", "cjs"],
  // One copy of the shared code for both entry points, in CommonJS as in ESM (a class must not exist twice).
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
});

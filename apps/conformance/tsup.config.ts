import { defineConfig } from "tsup";

export default defineConfig({
  entry: { matrix: "src/matrix.ts" },
  format: ["esm"],
  dts: false,
  clean: true,
  sourcemap: true,
  target: "node20",
  external: ["@sbox/core", "@sbox/conformance"],
});

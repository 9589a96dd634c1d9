import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "spec/index": "src/spec/index.ts" },
  format: ["esm"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
});

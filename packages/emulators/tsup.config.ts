import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "e2b/index": "src/e2b/index.ts",
    "fly/index": "src/fly/index.ts",
    "daytona/index": "src/daytona/index.ts",
  },
  format: ["esm"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
});

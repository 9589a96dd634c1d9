import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "e2b/index": "src/e2b/index.ts",
    "fly/index": "src/fly/index.ts",
    "kubernetes/index": "src/kubernetes/index.ts",
    "vercel/index": "src/vercel/index.ts",
    "daytona/index": "src/daytona/index.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
});

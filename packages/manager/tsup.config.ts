import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  // Native and driver modules stay external: they are loaded lazily at first use.
  external: ["better-sqlite3", "pg"],
});

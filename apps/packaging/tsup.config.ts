import { defineConfig } from "tsup";

export default defineConfig({
  entry: { "measure-install": "src/measure-install.ts" },
  format: ["esm"],
  clean: true,
  target: "node20",
  banner: { js: "#!/usr/bin/env node" },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Packing and installing take a while on a shared two-core machine.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    fileParallelism: false,
  },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // The end-to-end tests spawn the built binary and real sandboxes; two cores are shared by everyone.
    fileParallelism: false,
  },
});

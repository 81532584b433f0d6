import { configDefaults, defineConfig } from "vitest/config";

/** The fault suite (test/integration/faults) is its own run, `npm run test:faults` (vitest.faults.config.ts). */
export const FAULTS = "test/integration/faults/**/*.test.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, FAULTS],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Shared 2-core machines: a few files at once keeps child-process timing honest.
    maxWorkers: 2,
  },
});

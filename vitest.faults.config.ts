// `npm run test:faults`: the fault suite (docs/reliability.md), apart from `npm test` so neither passes 15 minutes.
import { configDefaults, defineConfig } from "vitest/config";
import base, { FAULTS } from "./vitest.config.js";

export default defineConfig({ ...base, test: { ...base.test, include: [FAULTS], exclude: [...configDefaults.exclude] } });

// Finished jobs are kept for inspection in Bull Board, bounded by count and age (BullMQ removes them lazily).
import type { KeepJobs } from "bullmq";

const DAY = 24 * 3600;
export const KEEP_COMPLETED: KeepJobs = { count: 1000, age: 7 * DAY };
export const KEEP_FAILED: KeepJobs = { count: 5000, age: 30 * DAY };

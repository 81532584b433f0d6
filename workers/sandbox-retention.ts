import { SANDBOX_RETENTION_QUEUE } from "../queues/index.js";
import { notImplemented } from "./placeholder.js";

export const processSandboxRetention = notImplemented(SANDBOX_RETENTION_QUEUE);

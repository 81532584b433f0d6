// Stopping runs from anywhere: the kill switch and per-run cancels travel over Redis pub/sub,
// so a flip reaches a running child at once, whichever process holds it.
// BullMQ's own cancelJob only works inside the process that runs the job.
import type { RedisClient } from "../../redis/connect.js";
import { z } from "zod";
import type { KillSwitch } from "../../control/kill-switch.js";

export type StopReason = "kill_switch_mid_run" | "cancelled" | "timeout" | "worker_shutdown" | "worker_lost" | "budget_exceeded";

export interface StopRequest {
  readonly reason: StopReason;
  readonly by?: string;
}

const CancelMessage = z.object({ run_id: z.string(), by: z.string() });

export function cancelChannel(prefix: string): string {
  return `${prefix}:control:run-cancel`;
}

/** Publisher side (any process). Returns how many workers heard it. */
export async function publishCancel(redis: RedisClient, prefix: string, runId: string, by: string): Promise<number> {
  return redis.publish(cancelChannel(prefix), JSON.stringify({ run_id: runId, by }));
}

/**
 * Worker side: the runs this process holds, each with an AbortController.
 * Watches the kill switch (pub/sub, its file, and a slow Redis poll in case a message was missed).
 */
export class RunControl {
  private readonly runs = new Map<string, AbortController>();
  private poll: NodeJS.Timeout | null = null;

  private constructor(
    private readonly subscriber: RedisClient,
    private readonly killSwitch: KillSwitch,
    private readonly onError: (err: Error) => void,
  ) {}

  static async start(subscriber: RedisClient, prefix: string, killSwitch: KillSwitch, onError: (err: Error) => void): Promise<RunControl> {
    const control = new RunControl(subscriber, killSwitch, onError);
    subscriber.on("message", (channel: string, message: string) => control.onMessage(channel, message, prefix));
    await subscriber.subscribe(cancelChannel(prefix), killSwitch.channel);
    return control;
  }

  /** Register a run; the signal aborts with a StopRequest as its reason. */
  register(runId: string): AbortSignal {
    const controller = new AbortController();
    this.runs.set(runId, controller);
    this.ensurePolling();
    return controller.signal;
  }

  unregister(runId: string): void {
    this.runs.delete(runId);
    if (this.runs.size === 0 && this.poll) {
      clearInterval(this.poll);
      this.poll = null;
    }
  }

  activeRunIds(): ReadonlySet<string> {
    return new Set(this.runs.keys());
  }

  stop(runId: string, request: StopRequest): boolean {
    const c = this.runs.get(runId);
    if (!c || c.signal.aborted) return false;
    c.abort(request);
    return true;
  }

  stopAll(request: StopRequest): void {
    for (const id of this.runs.keys()) this.stop(id, request);
  }

  async close(): Promise<void> {
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }

  private onMessage(channel: string, message: string, prefix: string): void {
    try {
      if (channel === this.killSwitch.channel) {
        if ((JSON.parse(message) as { on?: unknown }).on === true) this.stopAll({ reason: "kill_switch_mid_run" });
      } else if (channel === cancelChannel(prefix)) {
        const m = CancelMessage.parse(JSON.parse(message));
        this.stop(m.run_id, { reason: "cancelled", by: m.by });
      }
    } catch (err) {
      this.onError(err as Error);
    }
  }

  private ensurePolling(): void {
    // The file switch has no pub/sub; the Redis poll covers a message lost during a reconnect.
    this.poll ??= setInterval(() => {
      if (this.runs.size === 0) return;
      if (this.killSwitch.fileActive()) return this.stopAll({ reason: "kill_switch_mid_run" });
      this.killSwitch.isActive().then(
        (on) => on && this.stopAll({ reason: "kill_switch_mid_run" }),
        () => {},
      );
    }, 500);
  }
}

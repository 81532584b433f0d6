// `--wait`: until a job finishes, is removed, or the wait times out. Queue events answer promptly; a slow
// poll also catches what events cannot say (a job removed by a cancel, a missed event) and feeds progress.
import type { Job, Queue, QueueEvents } from "bullmq";

export type WaitOutcome =
  | { readonly kind: "finished"; readonly state: "completed" | "failed"; readonly job: Job }
  | { readonly kind: "timeout"; readonly state: string }
  | { readonly kind: "removed" };

export interface WaitOptions {
  readonly timeoutMs?: number;
  readonly pollMs?: number;
  /** Each poll, with the job as it stands (progress, state): for progress shown to a person. */
  readonly onPoll?: (job: Job, state: string) => Promise<void>;
}

export async function waitForJob(queue: Queue, events: QueueEvents, jobId: string, opts: WaitOptions = {}): Promise<WaitOutcome> {
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  let heard = false;
  let wake: () => void = () => {};
  const onFinished = ({ jobId: id }: { jobId: string }) => {
    if (id !== jobId) return;
    heard = true;
    wake();
  };
  events.on("completed", onFinished);
  events.on("failed", onFinished);
  try {
    for (;;) {
      const job = await queue.getJob(jobId);
      if (!job) return { kind: "removed" };
      const state = await job.getState();
      if (state === "completed" || state === "failed") {
        // The job was read before it finished (state is read after): read it again, with its outcome.
        const finished = await queue.getJob(jobId);
        if (!finished) return { kind: "removed" };
        return { kind: "finished", state, job: finished };
      }
      if (heard) {
        // One immediate look after an event; the state follows the event by a round trip at most.
        heard = false;
        continue;
      }
      await opts.onPoll?.(job, state);
      const left = deadline - Date.now();
      if (left <= 0) return { kind: "timeout", state };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, opts.pollMs ?? 1000));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    events.off("completed", onFinished);
    events.off("failed", onFinished);
  }
}

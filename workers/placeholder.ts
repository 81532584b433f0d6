// Until a queue's processor lands, its jobs fail loudly: never a placeholder that pretends success.
import { UnrecoverableError } from "bullmq";

export function notImplemented(queue: string): () => Promise<never> {
  return async () => {
    throw new UnrecoverableError(`not implemented: the ${queue} processor has not landed yet`);
  };
}

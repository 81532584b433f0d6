// A service process with HTTP (`start` or `serve`) for tests that talk to it, and a JSON client for its API.
import { CliProcess } from "./cli.js";

const BOARD_URL = /Bull Board at (http:\/\/\S+)\/admin\/queues/;

/** Starts `start` (workers + HTTP) or `serve` and waits until it answers; `base` is its URL. */
export async function startService(command: "start" | "serve", env: NodeJS.ProcessEnv): Promise<{ service: CliProcess; base: string }> {
  const service = new CliProcess([command], env);
  await service.waitForOutput(BOARD_URL);
  const base = BOARD_URL.exec(service.stdout)![1]!;
  if (command === "start") await service.waitForOutput(/workers \+ http running/);
  return { service, base };
}

export interface HttpAnswer {
  readonly status: number;
  /** The body parsed as JSON, or its text. */
  readonly body: any;
  readonly headers: Headers;
}

/** One request: a body other than a string is sent as JSON. */
export function httpCaller(base: () => string) {
  return async (method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<HttpAnswer> => {
    const res = await fetch(`${base()}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
}

// Large Margot bodies are worked in slices (ADR 0017, isolation between queues): the slices
// change nothing in the result, and no slice holds the event loop for long.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MARGOT_BODY_MAX_BYTES } from "../../../src/margot/contract.js";
import { DEFAULT_DESTRUCTIVE_VERBS } from "../../../src/margot/reading/destructive.js";
import { OutboundText } from "../../../src/margot/bridge/outbound.js";
import { redactPii } from "../../../src/margot/bridge/pii.js";
import { PreparationQueue, prepareNow } from "../../../src/margot/bridge/prepare.js";
import { textSlices } from "../../../src/margot/reading/text-slices.js";

const labelled = JSON.parse(readFileSync(new URL("../../fixtures/margot/labelled.json", import.meta.url), "utf8")) as { samples: { body: string }[] };

/** Realistic research prose up to `bytes`: the labelled samples, one after another. */
function bodyOf(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; ; i++) {
    const next = `${labelled.samples[i % labelled.samples.length]!.body}\n\n`;
    if (size + Buffer.byteLength(next) > bytes) return parts.join("") + " ".repeat(bytes - size);
    parts.push(next);
    size += Buffer.byteLength(next);
  }
}

describe("textSlices", () => {
  it("cuts at blank lines, loses nothing, and redaction slice by slice equals redaction of the whole", () => {
    const text = bodyOf(300_000) + "\nContact jane@acme.example or call +61 412 345 678 from 10.0.0.8.";
    const slices = textSlices(text, 16 * 1024);
    expect(slices.length).toBeGreaterThan(10);
    expect(slices.join("")).toBe(text);
    for (const slice of slices.slice(0, -1)) expect(slice.endsWith("\n\n")).toBe(true);
    const pii = { customer_names: ["Stripe"], internal_hosts: [] };
    expect(slices.map((s) => redactPii(s, pii).text).join("")).toBe(redactPii(text, pii).text);
  });

  it("a stretch without blank lines is cut at line ends, never inside a PEM block", () => {
    const pem = `-----BEGIN PRIVATE KEY-----\n${"QUJD".repeat(16).concat("\n").repeat(40)}-----END PRIVATE KEY-----\n`;
    const text = `${"line of prose\n".repeat(200)}${pem}${"more prose\n".repeat(200)}`;
    const slices = textSlices(text, 1024);
    expect(slices.join("")).toBe(text);
    expect(slices.filter((s) => s.includes("-----BEGIN")).every((s) => s.includes("-----END"))).toBe(true);
  });
});

describe("PreparationQueue", () => {
  const verbs = DEFAULT_DESTRUCTIVE_VERBS;
  const text = new OutboundText({ customer_names: ["Stripe"] });
  const input = (body: string) => ({ body, interactionId: "i-slices", projects: [] });

  it("gives the same preparation as the one-go version, however often it pauses", async () => {
    for (const body of [labelled.samples[0]!.body, bodyOf(200_000)]) {
      // The one-go result first: it also warms up what a first call compiles.
      const expected = prepareNow(input(body), verbs, text);
      let pauses = 0;
      const prepared = await new PreparationQueue(verbs, text, () => {
        pauses++;
        return new Promise<void>((r) => setImmediate(r));
      }).prepare(input(body));
      expect(prepared).toEqual(expected);
      // A short body goes in one stretch; 200 kB of it needs several.
      if (body.length < 10_000) expect(pauses).toBe(0);
    }
  });

  it("a body at the size limit holds the event loop for a small part of its total work", async () => {
    const body = bodyOf(MARGOT_BODY_MAX_BYTES);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MARGOT_BODY_MAX_BYTES);
    // The main thread's CPU time, not wall time nor the process's: other processes stretch wall time, and
    // the garbage collector's helper threads add to the process's CPU time without holding the event loop.
    const cpuMs = (since: NodeJS.CpuUsage) => {
      const d = process.threadCpuUsage(since);
      return (d.user + d.system) / 1000;
    };
    const attempt = async () => {
      const started = process.threadCpuUsage();
      prepareNow(input(body), verbs, text);
      const wholeMs = cpuMs(started);
      let sliceStart = process.threadCpuUsage();
      let longestMs = 0;
      let pauses = 0;
      const step = () => {
        longestMs = Math.max(longestMs, cpuMs(sliceStart));
        pauses++;
        return new Promise<void>((r) =>
          setImmediate(() => {
            sliceStart = process.threadCpuUsage();
            r();
          }),
        );
      };
      await new PreparationQueue(verbs, text, step).prepare(input(body));
      longestMs = Math.max(longestMs, cpuMs(sliceStart));
      console.log(`1 MiB: ${wholeMs.toFixed(0)} ms CPU in one go; longest slice ${longestMs.toFixed(0)} ms CPU, ${pauses} pauses`);
      return { wholeMs, longestMs, pauses };
    };
    // A ratio in the same run, not a fixed time. A collection that lands in one slice only lengthens it, so
    // the best of three tries is what the slicing bounds (a collection can make one slice near half the whole).
    let best = await attempt();
    for (let i = 1; i < 3 && best.longestMs >= best.wholeMs / 3; i++) {
      const next = await attempt();
      if (next.longestMs / next.wholeMs < best.longestMs / best.wholeMs) best = next;
    }
    expect(best.pauses).toBeGreaterThan(3);
    expect(best.longestMs).toBeLessThan(best.wholeMs / 3);
  });

  const smokeAction =
    "We should add idempotency to the Stripe webhook handler (app/api/stripe/webhook/route.ts) so that duplicate deliveries stop (target: 0 per month).";
  it("completions asked for in one turn are prepared together, each as on its own, a failing one failing alone", async () => {
    const bodies = [...labelled.samples.slice(0, 12).map((s) => s.body), bodyOf(200_000)];
    const expected = bodies.map((body) => prepareNow(input(body), verbs, text));
    let pauses = 0;
    const queue = new PreparationQueue(verbs, text, () => {
      pauses++;
      return new Promise<void>((r) => setImmediate(r));
    });
    // Projects that are not a list: extraction of an action-shaped body throws.
    const broken = { ...input(smokeAction), projects: null as never };
    const results = await Promise.allSettled([...bodies.map((body) => queue.prepare(input(body))), queue.prepare(broken)]);
    expect(results.slice(0, bodies.length).map((r) => (r.status === "fulfilled" ? r.value : r.reason))).toEqual(expected);
    expect(results.at(-1)?.status).toBe("rejected");
    // The large body still pauses; the short ones before it were settled at the first pause.
    expect(pauses).toBeGreaterThan(0);
  });
});

// classification  MB/s of Margot text read and classified (readResearch + classify), on the
//                 labelled set concatenated to 1 MiB, against a baseline in the same run: the same
//                 text lower-cased and cut into words (the least any reading must do). Best of 15
//                 rounds: steady state, as in a long-running worker.
import { readFileSync } from "node:fs";
import { classify } from "../src/margot/reading/classify.js";
import { readResearch } from "../src/margot/reading/reading.js";
import type { BenchContext } from "./sandcastle-run.js";

const LABELLED = new URL("../../test/fixtures/margot/labelled.json", import.meta.url);

function cpuMs(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

export async function benchClassification(ctx: BenchContext): Promise<object> {
  const samples = (JSON.parse(readFileSync(LABELLED, "utf8")) as { samples: { body: string }[] }).samples;
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < 1024 * 1024; i++) {
    const next = `${samples[i % samples.length]!.body}\n\n`;
    parts.push(next);
    size += next.length;
  }
  const text = parts.join("");
  // A worker reads text for hours: the JIT needs several 1 MiB rounds to settle (5 caught only warm-up).
  const rounds = ctx.quick ? 1 : 15;
  let classifyMs = Infinity;
  let baselineMs = Infinity;
  for (let r = 0; r < rounds; r++) {
    classifyMs = Math.min(classifyMs, cpuMs(() => classify(readResearch(text))));
    baselineMs = Math.min(baselineMs, cpuMs(() => void text.toLowerCase().match(/[a-z]+/g)));
  }
  const mb = text.length / 1e6;
  return {
    bench: "classification",
    text_mb: Number(mb.toFixed(2)),
    classify_mb_per_s: Number((mb / (classifyMs / 1000)).toFixed(2)),
    baseline_mb_per_s: Number((mb / (baselineMs / 1000)).toFixed(2)),
    ratio_to_baseline: Number((baselineMs / classifyMs).toFixed(3)),
    note: "CPU time (process.cpuUsage), best of rounds; baseline = lower-case + split into words",
  };
}

// Isolation between queues (ADR 0017): a Margot body at the size limit is worked beside three
// active Sandcastle runs in the same worker process (real Sandcastle, script agent, real git
// repo) without starving their lock renewals — every run ends ok, the Margot job runs once —
// and a body over the limit is refused at enqueue with a message naming the limit.
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Queue } from "bullmq";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MARGOT_BODY_MAX_BYTES, MargotIntentResult } from "../../../src/margot/contract.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { FIXTURES, MargotScope } from "../../helpers/margot-scope.js";
import { makeGitRepo, RunScope } from "../../helpers/run-scope.js";

const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
const labelled = JSON.parse(readFileSync(join(FIXTURES, "labelled.json"), "utf8")) as { samples: { body: string }[] };

/** Research prose of exactly `bytes` UTF-8 bytes: the labelled samples one after another, padded. */
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

let s: RunScope;
let m: MargotScope;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  s = new RunScope();
  m = await new MargotScope().start();
  // One deployment: the run scope's prefix and dirs, Margot's ledger, projects, fake Telegram and Linear.
  // A 3 s lock (renewed every 1.5 s): an event loop held for seconds would lose the runs' locks.
  env = { ...m.env(), ...s.env({ SANDCASTLE_BIN: "" }) };
});
afterEach(async () => {
  await stopAllCli();
  await m.close();
  await s.close();
});

it("a 1 MiB body runs beside 3 active runs in one process, every run ok; a body over the limit is refused", { timeout: 300_000 }, async () => {
  const repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  const worker = new CliProcess(["worker"], env);
  await worker.waitForOutput(/workers running/);

  // Three runs whose agents wait for $OUT_DIR/release: all three hold a slot and a lock meanwhile.
  const runs = [1, 2, 3].map((i) =>
    runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env, {
      input: JSON.stringify(s.request({ session_id: `iso-${i}`, prompt_template_dir: COMMIT_FILE, repo_workdir: repo, branch: `agent/iso-${i}` })),
      timeoutMs: 240_000,
    }),
  );
  await waitFor(async () => (await s.queue.getActiveCount()) === 3, 60_000, () => "3 active runs");

  const completionFile = join(s.dir.path, "completion.json");
  const completion = m.completion(bodyOf(MARGOT_BODY_MAX_BYTES));
  writeFileSync(completionFile, JSON.stringify(completion));
  const margot = await runCli(["enqueue", "margot-intent", "--completion", completionFile, "--wait"], env, { timeoutMs: 240_000 });
  expect(margot.code, margot.stderr).toBe(0);
  const result = MargotIntentResult.parse(lastJsonLine(margot.stdout));
  expect(result.interaction_id).toBe(completion.interaction_id);
  // The runs were still active the whole time (their agents wait for the release file).
  expect(await s.queue.getActiveCount()).toBe(3);

  const over = m.completion(bodyOf(MARGOT_BODY_MAX_BYTES + 1));
  writeFileSync(completionFile, JSON.stringify(over));
  const refused = await runCli(["enqueue", "margot-intent", "--completion", completionFile], env, { timeoutMs: 60_000 });
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain(`body must be at most ${MARGOT_BODY_MAX_BYTES} bytes`);
  expect(refused.stderr).toContain("Margot body size limit");
  expect(refused.stderr).toContain(`this one is ${MARGOT_BODY_MAX_BYTES + 1} bytes`);

  writeFileSync(join(s.outDir, "release"), "");
  const results = await Promise.all(runs);
  for (const r of results) expect(r.code, r.stderr).toBe(0);
  expect(results.map((r) => SandcastleRunResult.parse(lastJsonLine(r.stdout)).status)).toEqual(["ok", "ok", "ok"]);

  // The Margot job ran once: one attempt, one classified ledger row, and the over-limit one never reached Redis.
  const margotQueue = new Queue("margot-intent", { connection: s.redis, prefix: s.prefix });
  try {
    const job = await margotQueue.getJob(`intent-${completion.interaction_id}`);
    expect(job?.attemptsMade).toBe(1);
    expect(await margotQueue.getJob(`intent-${over.interaction_id}`)).toBeUndefined();
  } finally {
    await margotQueue.close();
  }
  expect(m.ledgerRows(completion.interaction_id).filter((r) => r.outcome !== "drafted")).toHaveLength(result.status === "drafted" ? 0 : 1);
});

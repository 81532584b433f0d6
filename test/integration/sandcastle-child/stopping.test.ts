// SIGTERM aborts the run and the child exits within seconds; a closed stdin (dead worker) ends the
// child and every agent process it started.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  FIXTURES,
  alive,
  cleanup,
  finish,
  makeHome,
  makeRepo,
  parseLines,
  pgrep,
  requireBuiltChild,
  startChild,
  tempDir,
  trackPid,
  waitFor,
  writeConfig,
} from "./child-harness.js";

beforeAll(requireBuiltChild);
afterEach(cleanup);

/** A sleep duration no other process on the machine uses: `pgrep -f "sleep <it>"` finds only ours. */
const uniqueSleep = () => `47.${String(process.pid).padStart(6, "0")}${Math.floor(Math.random() * 1e6)}`;

async function startSleepingRun(branch: string) {
  const repo = makeRepo();
  const out = tempDir("out");
  const sleepFor = uniqueSleep();
  const config = writeConfig({
    request: { agent: "script", prompt_template_dir: join(FIXTURES, "long-sleep"), branch, repo_workdir: repo, dry_run: true },
    env: { OUT_DIR: out, SLEEP_FOR: sleepFor },
  });
  const child = startChild(config, { cwd: repo, home: makeHome() });
  const marker = `sleep ${sleepFor}`;
  const [sleepPid] = await waitFor(() => {
    const pids = pgrep(marker);
    return pids.length > 0 ? pids : undefined;
  }, 20_000, "the agent's sleep to start");
  const agentPid = Number(readFileSync(join(out, "agent.pid"), "utf8").trim());
  trackPid(sleepPid!);
  trackPid(agentPid);
  expect(alive(agentPid)).toBe(true);
  return { child, marker, sleepPid: sleepPid!, agentPid };
}

describe("sandcastle child: stopping", () => {
  it("SIGTERM during a long agent run: aborts, exits non-zero within seconds, the sleep is gone", async () => {
    const { child, marker, agentPid } = await startSleepingRun("sandcastle/term");

    const sentAt = Date.now();
    process.kill(child.pid, "SIGTERM");
    const out = await finish(child);
    const took = Date.now() - sentAt;

    expect(took).toBeLessThan(5000);
    expect(out.code).not.toBe(0);
    expect(out.code).not.toBeNull();
    expect(out.last).toMatchObject({ type: "run_complete", result: { status: "failed", failure_reason: "cancelled" } });
    await waitFor(() => pgrep(marker).length === 0 && !alive(agentPid), 3000, "the agent processes to be gone");
  });

  it("stdin closing (the worker died): the child and its agent processes are gone within 5 s", async () => {
    const { child, marker, agentPid } = await startSleepingRun("sandcastle/orphan");

    const closedAt = Date.now();
    child.proc.stdin!.end();
    await waitFor(() => !alive(child.pid) && !alive(agentPid) && pgrep(marker).length === 0, 5000, "child and agent to be gone");
    expect(Date.now() - closedAt).toBeLessThan(5000);

    const { signal, code } = await child.done;
    // it ends its whole process group, itself included
    expect(signal === "SIGKILL" || (code !== null && code !== 0)).toBe(true);
    // if the dead worker's pipe still let it through, the last line says why
    const events = parseLines(child.lines);
    const last = events.at(-1);
    if (last?.type === "run_complete") expect(last).toMatchObject({ result: { status: "failed", failure_reason: "worker_lost" } });
  });
});

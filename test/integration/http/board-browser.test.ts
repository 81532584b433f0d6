// Bull Board in a real headless Chromium (Debian's, driven by playwright-core; no browser download): log in
// with the token, see the three queues with their counts, find a killed run under FAILED with its log lines.
// A screenshot goes to artifacts/ (git-ignored) for a person to look at.
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliProcess, stopAllCli, waitFor } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";

const CHROMIUM = process.env.SCQ_TEST_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = resolve(import.meta.dirname, "../../../artifacts");
const ADMIN = "board-admin-token-0123456789";
const VIEWER = "board-viewer-token-0123456789";
let s: RunScope;
let base: string;
let browser: Browser;
let killedRun: string;

const api = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", ...init.headers } });

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  s = new RunScope();
  const service = new CliProcess(["start"], s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, SCQ_VIEWER_TOKEN: VIEWER }));
  await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
  base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!;
  await service.waitForOutput(/workers \+ http running/);

  // One run that ends ok, one killed by a cancel.
  const ok = (await (await api("/v1/sandcastle-runs", { method: "POST", body: JSON.stringify(s.request({}, { FAKE_MODE: "ok" })) })).json()) as { job_id: string };
  const sleeper = (await (await api("/v1/sandcastle-runs", { method: "POST", body: JSON.stringify(s.request({}, { FAKE_MODE: "sleep" })) })).json()) as { job_id: string };
  killedRun = sleeper.job_id;
  await waitFor(() => existsSync(s.started(killedRun)), 20_000);
  // The "sleeping" line must be in the job's log before the cancel.
  await waitFor(async () => (await s.queue.getJobLogs(killedRun)).logs.join("\n").includes("sleeping"), 10_000);
  expect((await (await api(`/v1/runs/${killedRun}/cancel`, { method: "POST" })).json()) as object).toMatchObject({ outcome: "stopped", state: "failed" });
  await waitFor(async () => (await s.queue.getJob(ok.job_id).then((j) => j?.getState())) === "completed", 20_000);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // playwright-core gives each launch a fresh profile of its own (it refuses --user-data-dir here).
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

afterAll(async () => {
  await browser?.close();
  await stopAllCli();
  await s?.close();
});

describe("Bull Board in headless Chromium", () => {
  it("logs in with the token, shows the three queues with counts, and the killed run under FAILED with its log lines", async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    const apiStatuses: number[] = [];
    page.on("response", (r) => {
      if (r.url().includes("/admin/queues/api/")) apiStatuses.push(r.status());
    });

    await page.goto(`${base}/admin/queues`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await page.fill("#token", ADMIN);
    await Promise.all([page.waitForURL(/\/admin\/queues/), page.click("button[type=submit]")]);

    const cookie = (await context.cookies()).find((c) => c.name === "scq_session");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });

    // The overview: three queues, their counts, and no raw translation keys (the board's own fetches work).
    for (const name of ["sandcastle-run", "margot-intent", "sandbox-retention"]) await page.getByText(name, { exact: true }).first().waitFor({ timeout: 20_000 });
    await page.getByText("Loading...").waitFor({ state: "detached", timeout: 20_000 });
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "board-overview.png"), fullPage: true });
    const overview = await page.locator("body").innerText();
    expect(overview).not.toMatch(/QUEUE\.STATUS|MENU\.QUEUES|[A-Z]+\.[A-Z_]+\.[A-Z_]+/);
    expect(overview).toMatch(/failed/i);
    expect(apiStatuses.length).toBeGreaterThan(0);
    expect(apiStatuses.every((st) => st === 200)).toBe(true);

    // The killed run is under FAILED, with its log lines.
    await page.goto(`${base}/admin/queues/queue/sandcastle-run?status=failed`);
    await page.getByText(killedRun).first().waitFor({ timeout: 20_000 });
    // The Error tab: the failed reason, one line that says what happened.
    await page.getByText(/killed: cancelled — stopped: cancelled by api:admin@/).first().waitFor({ timeout: 20_000 });
    await page.getByRole("tab", { name: /logs/i }).first().click();
    await page.getByText("sleeping").first().waitFor({ timeout: 20_000 });
    await page.screenshot({ path: join(ARTIFACTS, "board-killed-run.png"), fullPage: true });

    // The completed list does not hold it.
    await page.goto(`${base}/admin/queues/queue/sandcastle-run?status=completed`);
    await page.waitForLoadState("networkidle");
    expect(await page.locator("body").innerText()).not.toContain(killedRun);
    await context.close();
  });

  it("the viewer token gets a read-only board: its writes are refused", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.fill("#token", VIEWER);
    await Promise.all([page.waitForURL(/\/admin\/queues/), page.click("button[type=submit]")]);
    await page.getByText("sandcastle-run", { exact: true }).first().waitFor({ timeout: 20_000 });
    const queues = await page.evaluate(async () => (await fetch("/admin/queues/api/queues")).json());
    expect((queues as { queues: Array<{ readOnlyMode: boolean }> }).queues.every((q) => q.readOnlyMode)).toBe(true);
    const pause = await page.evaluate(async () => (await fetch("/admin/queues/api/queues/sandcastle-run/pause", { method: "PUT" })).status);
    expect(pause).toBe(403);
    expect(await s.queue.isPaused()).toBe(false);
    await context.close();
  });

  it("a wrong token stays on the login page with an error", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.fill("#token", "not-the-token-0000000000");
    await page.click("button[type=submit]");
    await page.getByRole("alert").waitFor();
    expect(new URL(page.url()).pathname).toBe("/login");
    expect((await context.cookies()).find((c) => c.name === "scq_session")).toBeUndefined();
    await context.close();
  });
});

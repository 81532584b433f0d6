// Bull Board in a real headless Chromium (Debian's, driven by playwright-core; no browser download): log in
// with the token, see the three queues with the counts BullMQ reports, find a killed run under FAILED with its log lines.
// A screenshot goes to artifacts/ (git-ignored) for a person to look at.
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openQueues, QUEUE_NAMES, scheduleReap, type Queues } from "../../../queues/index.js";
import { CHROMIUM, skipBrowser } from "../../helpers/browser.js";
import { CliProcess, stopAllCli, waitFor } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";

const ARTIFACTS = resolve(import.meta.dirname, "../../../artifacts");
const ADMIN = "board-admin-token-0123456789";
const VIEWER = "board-viewer-token-0123456789";
let s: RunScope;
let base: string;
let browser: Browser;
let killedRun: string;
let queues: Queues;

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", ...init.headers } });

beforeAll(async () => {
  // No Chromium: skipped with the reason (browser.ts), or a failure under SCQ_TEST_BROWSER=require.
  if (skipBrowser) return;
  s = new RunScope();
  queues = openQueues(s.redis, s.prefix);
  const service = new CliProcess(["start"], s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, SCQ_VIEWER_TOKEN: VIEWER }));
  await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
  base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!;
  await service.waitForOutput(/workers \+ http running/);

  // One run that ends ok, one killed by a cancel.
  const ok = (await (await api("/v1/sandcastle-runs", { method: "POST", body: JSON.stringify(s.request({}, { FAKE_MODE: "ok" })) })).json()) as {
    job_id: string;
  };
  const sleeper = (await (await api("/v1/sandcastle-runs", { method: "POST", body: JSON.stringify(s.request({}, { FAKE_MODE: "sleep" })) })).json()) as {
    job_id: string;
  };
  killedRun = sleeper.job_id;
  await waitFor(() => existsSync(s.started(killedRun)), 20_000);
  // The "sleeping" line must be in the job's log before the cancel.
  await waitFor(async () => (await s.queue.getJobLogs(killedRun)).logs.join("\n").includes("sleeping"), 10_000);
  expect((await (await api(`/v1/runs/${killedRun}/cancel`, { method: "POST" })).json()) as object).toMatchObject({ outcome: "stopped", state: "failed" });
  await waitFor(async () => (await s.queue.getJob(ok.job_id).then((j) => j?.getState())) === "completed", 20_000);
  // Every queue holds a job: a Margot completion decided, and a reap an hour out (as retention schedules one).
  const intent = (await (
    await api("/v1/margot-intents", {
      method: "POST",
      body: JSON.stringify({
        interaction_id: `board-${Date.now()}`,
        body: "What's new in Next.js 15? Nothing affects us.",
        originated_at: "2026-09-17T03:04:05Z",
        originating_session_id: "s1",
      }),
    })
  ).json()) as { job_id: string };
  await waitFor(async () => (await queues.margotIntent.getJobState(intent.job_id)) === "completed", 20_000);
  await scheduleReap(queues.sandboxRetention, { run_id: ok.job_id }, Date.now() + 3_600_000);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // playwright-core gives each launch a fresh profile of its own (it refuses --user-data-dir here).
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await stopAllCli();
  await queues?.close();
  await s?.close();
});

/** The states the board has a tab for, as BullMQ names them (BullMQ 6 has no paused state: a paused queue's jobs wait). */
const TAB_STATES = ["active", "waiting", "waiting-children", "prioritized", "completed", "failed", "delayed"] as const;

/** What BullMQ reports for each state of a queue. */
async function bullCounts(name: string): Promise<Record<string, number>> {
  const counts = await queues.all.find((q) => q.name === name)!.getJobCounts(...TAB_STATES);
  return Object.fromEntries(TAB_STATES.map((st) => [st, counts[st] ?? 0]));
}

/** The count on each status tab of a queue's page, read from the DOM (a tab with no badge shows none: 0). */
function tabCounts(page: Page): Promise<Record<string, number>> {
  return page.locator('a[href*="?status="]:has(> [data-text])').evaluateAll((links) =>
    Object.fromEntries(
      links.map((a) => {
        const label = a.querySelector("[data-text]")?.textContent ?? "";
        const badge = (a.textContent ?? "").replace(label, "").trim();
        return [new URL(a.getAttribute("href") ?? "", "http://board").searchParams.get("status"), badge === "" ? 0 : Number(badge)];
      }),
    ),
  );
}

/** Every request a browser context makes, and every message its pages log about the Content-Security-Policy. */
function recordRequests(context: BrowserContext): { urls: string[]; cspViolations: string[] } {
  const seen = { urls: [] as string[], cspViolations: [] as string[] };
  context.on("request", (r) => seen.urls.push(r.url()));
  context.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) seen.cspViolations.push(m.text());
  });
  return seen;
}

/** What of `urls` is not this server's (data: and blob: URLs are the page's own). */
function thirdParty(urls: readonly string[]): string[] {
  const own = new URL(base).origin;
  return urls.filter((u) => !u.startsWith("data:") && !u.startsWith("blob:") && new URL(u).origin !== own);
}

describe.skipIf(skipBrowser)("Bull Board in headless Chromium", () => {
  it("logs in with the token, shows the three queues with counts, and the killed run under FAILED with its log lines; no request leaves this server", async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const requests = recordRequests(context);
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
    for (const name of ["sandcastle-run", "margot-intent", "sandbox-retention"])
      await page.getByText(name, { exact: true }).first().waitFor({ timeout: 20_000 });
    await page.getByText("Loading...").waitFor({ state: "detached", timeout: 20_000 });
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "board-overview.png"), fullPage: true });
    const overview = await page.locator("body").innerText();
    expect(overview).not.toMatch(/QUEUE\.STATUS|MENU\.QUEUES|[A-Z]+\.[A-Z_]+\.[A-Z_]+/);
    expect(overview).toMatch(/failed/i);
    expect(apiStatuses.length).toBeGreaterThan(0);
    expect(apiStatuses.every((st) => st === 200)).toBe(true);

    // Each queue's card totals its jobs; the run queue's flags the killed run as failed.
    const expected = Object.fromEntries(await Promise.all(QUEUE_NAMES.map(async (name) => [name, await bullCounts(name)] as const)));
    expect(expected["sandcastle-run"]).toMatchObject({ completed: 1, failed: 1 });
    expect(expected["margot-intent"]).toMatchObject({ completed: 1 });
    expect(expected["sandbox-retention"]).toMatchObject({ delayed: 1 });
    for (const name of QUEUE_NAMES) {
      const card = page.locator("li", { has: page.locator(`a[title="${name}"]`), hasText: / Jobs?$/m });
      const total = Object.values(expected[name]!).reduce((a, b) => a + b, 0);
      expect(await card.innerText(), name).toMatch(new RegExp(`\\b${total} Jobs?\\b`));
    }
    const flag = page.locator('a[href$="/queue/sandcastle-run?status=failed"]');
    expect(await flag.innerText()).toMatch(/^failed\s*1$/i);

    // Each queue's page: every status tab shows what BullMQ reports.
    for (const name of QUEUE_NAMES) {
      await page.goto(`${base}/admin/queues/queue/${name}`);
      let shown: Record<string, number> = {};
      await waitFor(
        async () => {
          shown = await tabCounts(page);
          // A tab for every state, each with BullMQ's count; any other tab (PAUSED) shows none.
          return (
            isDeepStrictEqual(Object.fromEntries(TAB_STATES.map((st) => [st, shown[st]])), expected[name]) &&
            Object.entries(shown).every(([st, n]) => st in expected[name]! || n === 0)
          );
        },
        20_000,
        () => `the ${name} tabs to show ${JSON.stringify(expected[name])} (shown: ${JSON.stringify(shown)})`,
      );
      await page.screenshot({ path: join(ARTIFACTS, `board-${name}.png`), fullPage: true });
    }

    // The killed run is under FAILED, with its log lines.
    await page.goto(`${base}/admin/queues/queue/sandcastle-run?status=failed`);
    await page.getByText(killedRun).first().waitFor({ timeout: 20_000 });
    // The Error tab: the failed reason, one line that says what happened.
    await page
      .getByText(/killed: cancelled — stopped: cancelled by api:admin@/)
      .first()
      .waitFor({ timeout: 20_000 });
    await page.getByRole("tab", { name: /logs/i }).first().click();
    await page.getByText("sleeping").first().waitFor({ timeout: 20_000 });
    await page.screenshot({ path: join(ARTIFACTS, "board-killed-run.png"), fullPage: true });

    // The completed list does not hold it.
    await page.goto(`${base}/admin/queues/queue/sandcastle-run?status=completed`);
    await page.waitForLoadState("networkidle");
    expect(await page.locator("body").innerText()).not.toContain(killedRun);

    // An ops page asks no third party for anything (the board's template links Google Fonts), and the CSP
    // that keeps it so never had to refuse what the board itself needs.
    expect(requests.urls.filter((u) => u.includes("/admin/queues/static/")).length).toBeGreaterThan(0);
    expect(thirdParty(requests.urls)).toEqual([]);
    expect(requests.cspViolations).toEqual([]);
    const pageHead = await (await fetch(`${base}/admin/queues`, { headers: { authorization: `Bearer ${VIEWER}` } })).text();
    expect(pageHead).not.toMatch(/fonts\.googleapis|fonts\.gstatic/);
    await context.close();
  });

  it("the viewer token gets a read-only board: its writes are refused", async () => {
    const context = await browser.newContext();
    const requests = recordRequests(context);
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
    expect(thirdParty(requests.urls)).toEqual([]);
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

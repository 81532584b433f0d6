import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_DESTRUCTIVE_VERBS, destructiveVerbsIn, parseDestructiveVerbs } from "../../../src/margot/reading/destructive.js";

describe("destructiveVerbsIn", () => {
  it("finds the gate's example: delete the customers table", () => {
    expect(destructiveVerbsIn("We should delete the customers table.")).toEqual(["delete"]);
  });

  it("is case-insensitive, returns each verb once, in list order", () => {
    expect(destructiveVerbsIn("DROP the old table, then Delete the job, then drop the index.")).toEqual(["delete", "drop"]);
  });

  it("matches inflections so tense does not dodge the gate", () => {
    expect(destructiveVerbsIn("Deleting stale rows")).toEqual(["delete"]);
    expect(destructiveVerbsIn("the table was dropped")).toEqual(["drop"]);
    expect(destructiveVerbsIn("wiping the cache")).toEqual(["wipe"]);
    expect(destructiveVerbsIn("it purges old assets")).toEqual(["purge"]);
    expect(destructiveVerbsIn("truncated the log table")).toEqual(["truncate"]);
  });

  it("matches phrases and shell-shaped verbs with their own boundaries", () => {
    expect(destructiveVerbsIn("Run rm -rf on the tmp folder")).toEqual(["rm -rf"]);
    expect(destructiveVerbsIn("then force-push main")).toEqual(["force push"]);
    expect(destructiveVerbsIn("git reset --hard origin/main")).toEqual(["reset --hard"]);
    expect(destructiveVerbsIn("Remove all expired sessions")).toEqual(["remove all"]);
    expect(destructiveVerbsIn("It overwrites the config")).toEqual(["overwrite"]);
  });

  it("respects word boundaries", () => {
    for (const text of [
      "Open the dropdown",
      "A drop-in replacement for moment.js",
      "Undeletable records",
      "The destroyer class",
      "Remove the unused import",
      "reset the counter",
      "Add retries to the Stripe webhook handler",
    ]) {
      expect(destructiveVerbsIn(text), text).toEqual([]);
    }
  });

  it("uses a given list instead of the default", () => {
    expect(destructiveVerbsIn("deprecate and delete the endpoint", ["deprecate"])).toEqual(["deprecate"]);
  });
});

describe("parseDestructiveVerbs", () => {
  it("parses MARGOT_DESTRUCTIVE_VERBS, comma-separated", () => {
    expect(parseDestructiveVerbs(" Delete, drop ,, force  push ")).toEqual(["delete", "drop", "force push"]);
  });

  it("unset or blank means the defaults, never an empty list", () => {
    expect(parseDestructiveVerbs(undefined)).toEqual([...DEFAULT_DESTRUCTIVE_VERBS]);
    expect(parseDestructiveVerbs(" , ")).toEqual([...DEFAULT_DESTRUCTIVE_VERBS]);
  });

  it("the default list holds the documented verbs", () => {
    expect(DEFAULT_DESTRUCTIVE_VERBS).toEqual([
      "delete", "drop", "destroy", "truncate", "wipe", "purge", "erase", "remove all", "rm -rf", "force push", "reset --hard", "overwrite",
    ]);
  });
});

describe("destructive verbs are judged as actions on an object, not as words", () => {
  // Every single-word verb of the default list, used transitively (an action), intransitively and as a noun.
  const uses: Record<string, { action: string[]; not: string[] }> = {
    delete: {
      action: ["We should delete the stale sessions table.", "Old rows should be deleted."],
      not: ["The API returns 404 after a delete.", "Soft deletes from the admin panel are logged."],
    },
    drop: {
      action: ["Drop the legacy_orders table in a migration.", "The unused index can be dropped."],
      not: [
        "The failure rate drops from 8 % to 1 %.", "We saw a sharp drop in signups.", "Latency dropped considerably after the fix.",
        "A 5% drop in conversion followed.",
      ],
    },
    destroy: {
      action: ["Destroy the staging cluster after the test.", "The old volumes were destroyed."],
      not: ["Trust destroys slowly and rebuilds slowly.", "The destroy button sits in settings."],
    },
    truncate: {
      action: ["Truncate the audit_events table nightly.", "The table gets truncated on deploy."],
      not: ["Long names truncate at 40 characters.", "A truncate on that table locks it."],
    },
    wipe: {
      action: ["Wipe the Redis cache before the migration.", "Devices are wiped on logout."],
      not: ["The screen wipes to the next slide.", "The nightly wipe runs at 2 am."],
    },
    purge: {
      action: ["Purge the CDN cache for /pricing.", "Old logs should be purged."],
      not: ["The cache purges automatically every hour.", "A purge takes about 30 seconds."],
    },
    erase: {
      action: ["Erase the user's photos on account deletion.", "Backups are erased after 30 days."],
      not: ["Stains erase easily with the new cleaner.", "An erase request arrives by email."],
    },
    overwrite: {
      action: ["Overwrite the production config with the staging one.", "The file was overwritten by the deploy."],
      not: ["The upload never overwrites in place.", "An overwrite of that key is refused."],
    },
  };
  for (const [verb, { action, not }] of Object.entries(uses)) {
    it.each(action)(`${verb}: "%s" is destructive`, (text) => expect(destructiveVerbsIn(text, [verb])).toEqual([verb]));
    it.each(not)(`${verb}: "%s" is not`, (text) => expect(destructiveVerbsIn(text, [verb])).toEqual([]));
  }

  it("a rate that drops: \"so the failure rate drops from 8 %\" is not destructive", () => {
    expect(destructiveVerbsIn("Add retries to the upload route so the failure rate drops from 8 % to under 1 %.")).toEqual([]);
  });

  it("phrases always count: rm -rf, force push, reset --hard, remove all", () => {
    expect(destructiveVerbsIn("run rm -rf on it, force-push, git reset --hard, remove all rows")).toEqual([
      "remove all", "rm -rf", "force push", "reset --hard",
    ]);
  });

  it("skipping the patterns whose words do not occur changes no answer: every fixture body, read with and without the skip", () => {
    const fixture = (name: string) =>
      JSON.parse(readFileSync(new URL(`../../fixtures/margot/${name}`, import.meta.url), "utf8")) as {
        samples: { body: string }[];
        follow_ups?: { body: string }[];
      };
    const bodies = ["labelled.json", "held-out.json", "smoke.json"].flatMap((f) => {
      const d = fixture(f);
      return [...d.samples, ...(d.follow_ups ?? [])].map((s) => s.body);
    });
    const withVerbs = [
      ...bodies,
      ...DEFAULT_DESTRUCTIVE_VERBS.flatMap((v) => [`We should ${v} the old table.`, `The rate ${v}s from 8 %.`, `a sharp ${v}`, `${v.toUpperCase()} IT NOW`]),
    ];
    let found = 0;
    for (const body of withVerbs) {
      // ſ folds to an ASCII letter, so a text holding it runs every pattern: the reference.
      const reference = destructiveVerbsIn(`ſ ${body}`);
      expect(destructiveVerbsIn(body), body).toEqual(reference);
      found += reference.length;
    }
    expect(found).toBeGreaterThan(DEFAULT_DESTRUCTIVE_VERBS.length);
  });
});

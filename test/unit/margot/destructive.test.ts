import { describe, expect, it } from "vitest";
import { DEFAULT_DESTRUCTIVE_VERBS, destructiveVerbsIn, parseDestructiveVerbs } from "../../../src/margot/destructive.js";

describe("destructiveVerbsIn", () => {
  it("finds the seed's example", () => {
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

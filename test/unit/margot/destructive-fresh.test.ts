// The destructive-verb gate judges a verb as an action on an object, not as a word (destructive.ts). These
// sentences were written for this test, none taken from the fixtures or the other tests: for every
// single-word verb of the default list, its noun uses and intransitive uses (no action, so no verb
// reported), and its actions, still caught — including "Soft deletes account for most of the slow queries",
// the plural noun the gate once read as a verb.
import { describe, expect, it } from "vitest";
import { destructiveVerbsIn } from "../../../src/margot/reading/destructive.js";

const uses: Record<string, { noun: string[]; intransitive: string[]; action: string[] }> = {
  delete: {
    noun: [
      "Soft deletes account for most of the slow queries.",
      "Cascading deletes lock the whole orders shard for seconds.",
      "Hard deletes make audits impossible, so the team keeps tombstones.",
      "Bulk deletes take minutes on the larger tenants.",
      "The number of deletes per hour tripled after the import.",
      "We saw a spike in deletes during the migration window.",
    ],
    intransitive: ["Old messages delete automatically after a week.", "The draft deletes once the retention window closes."],
    action: [
      "The nightly job deletes stale sessions from Redis.",
      "We should delete the orphaned uploads bucket.",
      "Postgres deletes dead tuples during autovacuum.",
      "Delete every draft older than 90 days.",
      "The admin script hard deletes the account row.",
      "The job deletes account records nightly.",
      "Stripe deletes test data after 90 days.",
      "This deletes the row and its history.",
    ],
  },
  drop: {
    noun: [
      "Packet drops between the two regions explain the timeouts.",
      "Frame drops on older Android phones make checkout feel sluggish.",
      "Connection drops happen mostly on hotel Wi-Fi.",
      "Three drops in a row trigger the circuit breaker.",
    ],
    intransitive: ["Latency drops once the cache is warm.", "The connection drops every few minutes on hotel Wi-Fi.", "Signups drop off on weekends."],
    action: [
      "Drop the legacy_orders table after the backfill.",
      "The migration drops the old index before creating the new one.",
      "The sampler drops every tenth event before export.",
      "Cron drops old partitions every night.",
    ],
  },
  destroy: {
    noun: ["The plan shows two destroys and one create.", "Terraform plans with destroys need a second reviewer."],
    intransitive: ["A reputation destroys faster than it recovers."],
    action: ["Destroy the preview environments every Friday.", "The teardown step destroys the ephemeral cluster.", "Unused volumes should be destroyed."],
  },
  truncate: {
    noun: ["Table truncates take an exclusive lock.", "Several truncates ran during business hours last week."],
    intransitive: ["Long commit messages truncate at 72 characters in the log view.", "The preview truncates after three lines."],
    action: [
      "Truncate the audit_events table before the load test.",
      "The cleanup task truncates the staging tables every Sunday.",
      "Old partitions should be truncated.",
    ],
  },
  wipe: {
    noun: ["Remote wipes need the device to be online.", "Disk wipes take hours on spinning drives."],
    intransitive: ["The whiteboard wipes clean with a dry cloth.", "The kiosk session wipes when the customer walks away."],
    action: ["Wipe the staging database before each demo.", "The reset script wipes all local state.", "Devices get wiped after ten failed attempts."],
  },
  purge: {
    noun: ["Cache purges take up to thirty seconds to reach every edge.", "Frequent purges hurt the hit ratio."],
    intransitive: ["The queue purges automatically at midnight.", "The CDN purges within a minute of the deploy."],
    action: [
      "Purge the CDN cache after every release.", "The deploy hook purges stale assets from the edge.", "Old builds are purged weekly.",
      "The worker that purges assets runs hourly.",
    ],
  },
  erase: {
    noun: ["Secure erases of the SSDs are logged by the vendor.", "Block erases wear out flash over time."],
    intransitive: ["Pencil marks erase easily.", "The counter erases on reboot."],
    action: [
      "Erase the customer's uploads when the account closes.",
      "The retention job erases personal data after two years.",
      "Exported files are erased after download.",
    ],
  },
  overwrite: {
    noun: ["Concurrent overwrites lose data when two tabs save at once.", "Silent overwrites happen when two editors save together."],
    intransitive: ["The cache entry overwrites without warning.", "New uploads overwrite in place."],
    action: [
      "Overwrite the production config with the staging one.",
      "The importer overwrites existing records.",
      "Customer notes were overwritten by the sync.",
    ],
  },
};

describe("destructive verbs on sentences written fresh", () => {
  for (const [verb, { noun, intransitive, action }] of Object.entries(uses)) {
    it.each(noun)(`${verb} as a noun: "%s" is not destructive`, (text) => expect(destructiveVerbsIn(text)).toEqual([]));
    it.each(intransitive)(`${verb} without an object: "%s" is not destructive`, (text) => expect(destructiveVerbsIn(text)).toEqual([]));
    it.each(action)(`${verb} as an action: "%s" is destructive`, (text) => expect(destructiveVerbsIn(text)).toEqual([verb]));
  }
});

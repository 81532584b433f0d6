// What the Margot bridge's flows are handed: stores, logs, the review channel, Linear, timers and
// settings. Nothing in the flows reads config or env.
import type { AuditLog } from "../../audit/audit-log.js";
import type { KillSwitch } from "../../control/kill-switch.js";
import type { IssueTracker } from "../../linear/issues.js";
import type { Logger } from "../../log.js";
import type { ReviewChannel } from "../../review/review-channel.js";
import type { DraftStore } from "../store/drafts.js";
import type { FollowUpLog } from "../store/follow-ups.js";
import type { IntentStore } from "../store/intents.js";
import type { MargotLedger } from "../store/ledger.js";
import type { PiiConfig } from "./pii.js";
import type { Project } from "../projects.js";
import type { DraftRateLimit } from "../store/rate-limit.js";

/** When drafts' timers fire; implemented with delayed jobs by the worker. Each call is idempotent. */
export interface DraftTimers {
  scheduleExpire(draftId: string, generation: number, atMs: number): Promise<void>;
  /** Best-effort: the expire job also checks the draft's state and generation. */
  cancelExpire(draftId: string, generation: number): Promise<void>;
  scheduleResurface(draftId: string, generation: number, atMs: number): Promise<void>;
  scheduleRelease(draftId: string, atMs: number): Promise<void>;
  /** A draft or approval held by the kill switch looks again then. */
  scheduleHold(draftId: string, atMs: number): Promise<void>;
}

export interface BridgeSettings {
  readonly expiryMs: number;
  readonly deferMs: number;
  readonly suppressMs: number;
  readonly destructiveVerbs: readonly string[];
  readonly pii: PiiConfig;
  /** While the kill switch is on, held drafts and approvals look again this often (ms). */
  readonly holdRecheckMs?: number;
}

export interface BridgeDeps {
  readonly intents: IntentStore;
  readonly drafts: DraftStore;
  readonly rateLimit: DraftRateLimit;
  readonly ledger: MargotLedger;
  /** MARGOT_FOLLOW_UP_PATH: where research follow-ups go for Pi-CEO to start the new research. */
  readonly followUps: FollowUpLog;
  readonly audit: AuditLog;
  readonly channel: ReviewChannel;
  /** null when LINEAR_API_KEY is not set: an approval then fails with a message saying so. */
  readonly issues: IssueTracker | null;
  readonly timers: DraftTimers;
  /** On: nothing is posted and no Linear issue is created; drafts and approvals wait (ADR 0017). */
  readonly killSwitch: Pick<KillSwitch, "isActive" | "fileActive" | "key">;
  readonly projects: () => Promise<readonly Project[]>;
  readonly settings: BridgeSettings;
  readonly log: Logger;
  readonly now?: () => number;
  readonly newDraftId?: () => string;
}

export { isoTime as iso } from "../../iso-time.js";

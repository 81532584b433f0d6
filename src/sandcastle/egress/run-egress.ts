// What a run's request may ask of the network, and what its containers then get (ADR 0035). The operator decides:
// SANDCASTLE_EGRESS_ALLOW is what a run may reach unless its request says less or other; SANDCASTLE_EGRESS_PERMIT is
// the most a request's `egress_allow` may name (a request never widens past it); `network: "open"` only where
// SANDCASTLE_EGRESS_OPEN=1. SANDCASTLE_CONTAINER_NETWORK, when set, is the operator's own control: no proxy on top.
import type { EgressPolicy, SandcastleRunRequest } from "../contract.js";
import { formatRule, parseRule, within, type EgressRule } from "./allowlist.js";

export interface EgressSettings {
  readonly allow: readonly EgressRule[];
  readonly permit: readonly EgressRule[];
  readonly hosts: Readonly<Record<string, string>>;
  readonly open: boolean;
  /** SANDCASTLE_CONTAINER_NETWORK. */
  readonly network: string | null;
}

export interface EgressProblem {
  readonly field: "network" | "egress_allow";
  readonly problem: string;
}

/** Why a request asks for more than the deployment permits (empty when it does not). */
export function egressProblems(
  request: Pick<SandcastleRunRequest, "network" | "egress_allow">,
  settings: Pick<EgressSettings, "permit" | "open">,
): EgressProblem[] {
  const problems: EgressProblem[] = [];
  if (request.network === "open" && !settings.open)
    problems.push({ field: "network", problem: '"open" (any host, no egress policy) is not allowed here: the operator has not set SANDCASTLE_EGRESS_OPEN=1' });
  for (const entry of request.egress_allow ?? []) {
    const rule = parseRule(entry);
    if (!("problem" in rule) && !within(rule, settings.permit)) {
      problems.push({
        field: "egress_allow",
        problem: `${entry} is more than this deployment permits (SANDCASTLE_EGRESS_PERMIT: ${settings.permit.map(formatRule).join(", ") || "nothing"})`,
      });
    }
  }
  return problems;
}

/** The policy a container run gets. */
export function egressPolicy(request: Pick<SandcastleRunRequest, "network" | "egress_allow">, settings: EgressSettings): EgressPolicy {
  if (request.network === "none") return { mode: "none" };
  if (settings.network !== null) return { mode: "operator", network: settings.network };
  if (request.network === "open") return { mode: "open" };
  return { mode: "allowlist", allow: request.egress_allow ?? settings.allow.map(formatRule), hosts: { ...settings.hosts } };
}

/** One word for the audit row: how the run's containers reached the network. */
export function egressMode(policy: EgressPolicy): string {
  return policy.mode === "operator" ? `operator:${policy.network}` : policy.mode;
}

// The hosts a run's containers may reach (ADR 0035): `host`, `*.domain` (its subdomains, not the domain itself) or an
// exact IP address, each with an optional `:port` (none: 443 and 80). Checked on the name a client asked for,
// before anything is resolved or connected; an address is allowed only when it is listed as one.
import { isIP } from "node:net";
import { z } from "zod";

export interface EgressRule {
  /** Lower-case host, or `*.domain`. */
  readonly host: string;
  /** null: 443 and 80. */
  readonly port: number | null;
}

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const NAME = new RegExp(`^(\\*\\.)?${LABEL}(\\.${LABEL})*$`);
const DEFAULT_PORTS = [443, 80];

/** One entry as written (`api.anthropic.com`, `*.githubusercontent.com:443`, `10.0.0.5:8080`), or a problem in words. */
export function parseRule(entry: string): EgressRule | { problem: string } {
  const text = entry.trim().toLowerCase();
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d+))?$/.exec(text);
  const plain = /^([^:]+)(?::(\d+))?$/.exec(text);
  const [host, port] = bracketed ? [bracketed[1]!, bracketed[2]] : plain ? [plain[1]!, plain[2]] : [text, undefined];
  if (!(isIP(host) !== 0 || NAME.test(host)))
    return { problem: `${JSON.stringify(entry.slice(0, 80))} is not a host, *.domain or IP address with an optional :port` };
  const n = port === undefined ? null : Number(port);
  if (n !== null && (!Number.isInteger(n) || n < 1 || n > 65535)) return { problem: `${JSON.stringify(entry.slice(0, 80))} has a port outside 1-65535` };
  return { host, port: n };
}

/** A comma list of entries, as SANDCASTLE_EGRESS_ALLOW takes it. */
export const EgressList = z.string().transform((text, ctx) => {
  const rules: EgressRule[] = [];
  for (const entry of text.split(",").filter((e) => e.trim().length > 0)) {
    const rule = parseRule(entry);
    if ("problem" in rule)
      ctx.addIssue({ code: "custom", message: `takes host, *.domain or IP entries with an optional :port, comma-separated: ${rule.problem}` });
    else rules.push(rule);
  }
  return rules;
});

/** What a request may write: an entry per item. */
export const EgressEntry = z.string().refine((e) => !("problem" in parseRule(e)), { error: "must be a host, *.domain or IP address with an optional :port" });

const portsOf = (rule: EgressRule) => (rule.port === null ? DEFAULT_PORTS : [rule.port]);

/** Does `rule` let a client reach host:port? */
function covers(rule: EgressRule, host: string, port: number): boolean {
  if (!portsOf(rule).includes(port)) return false;
  const h = host.toLowerCase().replace(/\.$/, "");
  if (rule.host.startsWith("*.")) return isIP(h) === 0 && h.endsWith(rule.host.slice(1));
  return h === rule.host;
}

export function allows(rules: readonly EgressRule[], host: string, port: number): boolean {
  return rules.some((rule) => covers(rule, host, port));
}

/** Is every connection `inner` allows also allowed by `outer`? (a request never widens past the operator's list) */
export function within(inner: EgressRule, outer: readonly EgressRule[]): boolean {
  return outer.some((o) => {
    if (!portsOf(inner).every((p) => portsOf(o).includes(p))) return false;
    if (o.host.startsWith("*.")) return isIP(inner.host) === 0 && (inner.host.startsWith("*.") ? inner.host.slice(1) : inner.host).endsWith(o.host.slice(1));
    return inner.host === o.host;
  });
}

export function formatRule(rule: EgressRule): string {
  const host = isIP(rule.host) === 6 ? `[${rule.host}]` : rule.host;
  return rule.port === null ? host : `${host}:${rule.port}`;
}

/** The model APIs of the four agents' vendors: what a run may reach when the operator says nothing. */
export const DEFAULT_EGRESS_ALLOW = "api.anthropic.com:443,api.openai.com:443,opencode.ai:443";

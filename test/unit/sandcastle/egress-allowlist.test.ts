// The egress allowlist (ADR 0035): what an entry means, what it lets through, and whether a request's entry stays
// within what the operator permits.
import { describe, expect, it } from "vitest";
import { allows, EgressList, formatRule, parseRule, within, type EgressRule } from "../../../src/sandcastle/egress/allowlist.js";
import { connectTarget } from "../../../src/sandcastle/egress/egress-proxy.js";
import { egressPolicy, egressProblems } from "../../../src/sandcastle/egress/run-egress.js";

const rules = (text: string): EgressRule[] => EgressList.parse(text);
const rule = (entry: string): EgressRule => parseRule(entry) as EgressRule;

describe("egress allowlist", () => {
  it("an entry is a host, *.domain or address, with an optional port (none: 443 and 80)", () => {
    expect(rule("API.Anthropic.com")).toEqual({ host: "api.anthropic.com", port: null });
    expect(rule("*.githubusercontent.com:443")).toEqual({ host: "*.githubusercontent.com", port: 443 });
    expect(rule("10.0.0.5:8080")).toEqual({ host: "10.0.0.5", port: 8080 });
    expect(rule("[::1]:4000")).toEqual({ host: "::1", port: 4000 });
    for (const bad of ["http://x.com", "x.com:0", "x.com:70000", "*", "a b.com", "-x.com", "x.com/path"]) expect(parseRule(bad)).toHaveProperty("problem");
    expect(() => EgressList.parse("ok.com,http://bad")).toThrow(/takes host, \*\.domain or IP entries/);
    expect(formatRule(rule("[::1]:4000"))).toBe("[::1]:4000");
  });

  it("lets through exactly what is listed: a wildcard its subdomains, never its apex; an address only when listed as one", () => {
    const list = rules("api.anthropic.com:443,*.example.org,10.0.0.5:8080");
    expect(allows(list, "api.anthropic.com", 443)).toBe(true);
    expect(allows(list, "API.ANTHROPIC.COM.", 443)).toBe(true);
    expect(allows(list, "api.anthropic.com", 80)).toBe(false);
    expect(allows(list, "evil.anthropic.com", 443)).toBe(false);
    expect(allows(list, "a.b.example.org", 80)).toBe(true);
    expect(allows(list, "example.org", 443)).toBe(false);
    expect(allows(list, "example.org.evil.com", 443)).toBe(false);
    expect(allows(list, "10.0.0.5", 8080)).toBe(true);
    expect(allows(list, "10.0.0.6", 8080)).toBe(false);
  });

  it("a request's entry must stay within the operator's permit: same or narrower host, same or fewer ports", () => {
    const permit = rules("*.github.com,api.openai.com:443");
    expect(within(rule("api.github.com"), permit)).toBe(true);
    expect(within(rule("*.x.github.com:443"), permit)).toBe(true);
    expect(within(rule("github.com"), permit)).toBe(false);
    expect(within(rule("api.openai.com"), permit)).toBe(false); // 80 and 443 is more than 443
    expect(within(rule("api.openai.com:443"), permit)).toBe(true);
    expect(egressProblems({ network: "default", egress_allow: ["evil.com"] }, { permit, open: false })).toEqual([{ field: "egress_allow", problem: expect.stringMatching(/evil\.com is more than this deployment permits/) }]);
    expect(egressProblems({ network: "open" }, { permit, open: false })).toEqual([{ field: "network", problem: expect.stringMatching(/SANDCASTLE_EGRESS_OPEN=1/) }]);
    expect(egressProblems({ network: "open" }, { permit, open: true })).toEqual([]);
  });

  it("a run's policy: none wins, then the operator's network, then open, else the allowlist", () => {
    const settings = { allow: rules("api.anthropic.com:443"), permit: [], hosts: { "gw.internal": "10.0.0.5" }, open: true, network: null };
    expect(egressPolicy({ network: "default" }, settings)).toEqual({
      mode: "allowlist",
      allow: ["api.anthropic.com:443"],
      hosts: { "gw.internal": "10.0.0.5" },
    });
    expect(egressPolicy({ network: "default", egress_allow: ["gw.internal:8080"] }, settings)).toMatchObject({ allow: ["gw.internal:8080"] });
    expect(egressPolicy({ network: "none" }, { ...settings, network: "llm-net" })).toEqual({ mode: "none" });
    expect(egressPolicy({ network: "default" }, { ...settings, network: "llm-net" })).toEqual({ mode: "operator", network: "llm-net" });
    expect(egressPolicy({ network: "open" }, settings)).toEqual({ mode: "open" });
  });

  it("CONNECT takes host:port and nothing else", () => {
    expect(connectTarget("api.anthropic.com:443")).toEqual({ host: "api.anthropic.com", port: 443 });
    expect(connectTarget("[2001:db8::1]:443")).toEqual({ host: "2001:db8::1", port: 443 });
    for (const bad of ["api.anthropic.com", "x:0", "x:99999", "http://x:443", "a:b:443"]) expect(connectTarget(bad)).toBeUndefined();
  });
});

// Which Node the CLI entry lets through (package.json's engines.node, `>=MAJOR.MINOR`).
import { describe, expect, it } from "vitest";
import { minimumNode, nodeRefusal } from "../../../src/cli/node-version.js";

describe("nodeRefusal", () => {
  it("refuses a Node below the minimum, naming both and the binary; lets the minimum and anything newer through", () => {
    expect(nodeRefusal("20.20.2", ">=22.13", "/usr/bin/node")).toBe(
      "needs Node 22.13 or later, and this is Node 20.20.2 (/usr/bin/node): put a newer node first on PATH (in a checkout of sandcastle-queue, `. scripts/node24.sh` does)",
    );
    expect(nodeRefusal("22.12.9", ">=22.13", "/n")).toMatch(/^needs Node 22\.13 or later, and this is Node 22\.12\.9 /);
    for (const ok of ["22.13.0", "22.13.1", "22.20.0", "23.0.0", "24.22.3", "v25.1.0"]) expect(nodeRefusal(ok, ">=22.13", "/n"), ok).toBeNull();
    expect(nodeRefusal("22.13.0", ">=22.13.1", "/n")).toMatch(/^needs Node 22\.13\.1 or later/);
  });

  it("reads >=X, >=X.Y and >=X.Y.Z; another form is not guessed at (nothing refused)", () => {
    expect(minimumNode(">=22.13")).toEqual([22, 13, 0]);
    expect(minimumNode(">= 22")).toEqual([22, 0, 0]);
    expect(minimumNode(">=22.13.1")).toEqual([22, 13, 1]);
    expect(minimumNode("^22 || ^24")).toBeNull();
    expect(nodeRefusal("18.0.0", "^22 || ^24", "/n")).toBeNull();
  });
});

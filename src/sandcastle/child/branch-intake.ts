// The host taking a run's branch from its bundle (ADR 0033), and nothing else: the bundle is read as data by
// the host's own git in the host repository (hooks and fsmonitor off, hardened-git.ts), never by running git
// in anything the agent wrote. Checked before the branch moves:
//   - the bundle names exactly one ref, the run's branch;
//   - every object in it passes fsck (`index-pack --strict`: also `.git` / `.gitmodules` tricks, broken links);
//   - its tip is a commit that descends from what the branch pointed at when the phase began;
//   - the branch still points there (compare-and-swap), so a concurrent change is never overwritten.
import { spawn } from "node:child_process";
import { createReadStream, existsSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { ContainerUser } from "../containers/container-args.js";
import { handBack } from "./container-user.js";
import { branchRef, git, isAncestor } from "./repository.js";

/** A header longer than this is not a bundle we made (prerequisites are a line per excluded commit). */
const MAX_HEADER_BYTES = 64 * 2 ** 20;
const SIGNATURES = ["# v2 git bundle\n", "# v3 git bundle\n"];
const OBJECT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

export class IntakeRefused extends Error {
  override readonly name = "IntakeRefused";
}

export interface BundleHeader {
  readonly refs: ReadonlyArray<{ readonly id: string; readonly name: string }>;
  readonly prerequisites: readonly string[];
  /** Where the pack starts in the file. */
  readonly packOffset: number;
}

/** Reads the bundle's header (signature, capabilities, prerequisites, refs, blank line) without trusting it. */
export async function readBundleHeader(path: string): Promise<BundleHeader> {
  const fh = await open(path, "r");
  let text = "";
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let end = -1;
    while (end < 0) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) throw new IntakeRefused("the bundle ends inside its header");
      text += chunk.subarray(0, bytesRead).toString("latin1");
      end = text.indexOf("\n\n");
      if (end < 0 && text.length > MAX_HEADER_BYTES) throw new IntakeRefused("the bundle's header is too long");
    }
    text = text.slice(0, end + 1);
  } finally {
    await fh.close();
  }
  const signature = SIGNATURES.find((s) => text.startsWith(s));
  if (signature === undefined) throw new IntakeRefused("not a git bundle (v2 or v3)");
  const refs: Array<{ id: string; name: string }> = [];
  const prerequisites: string[] = [];
  for (const line of text.slice(signature.length).split("\n")) {
    if (line.length === 0) continue;
    if (line.startsWith("@")) {
      if (line !== "@object-format=sha1" && line !== "@object-format=sha256")
        throw new IntakeRefused(`the bundle asks for a capability this host does not take (${line.slice(0, 80)})`);
      continue;
    }
    const prerequisite = line.startsWith("-");
    const body = prerequisite ? line.slice(1) : line;
    const space = body.indexOf(" ");
    const id = space < 0 ? body : body.slice(0, space);
    if (!OBJECT_ID.test(id)) throw new IntakeRefused("the bundle's header holds a line that is not an object id");
    if (prerequisite) prerequisites.push(id);
    else refs.push({ id, name: body.slice(space + 1) });
  }
  return { refs, prerequisites, packOffset: Buffer.byteLength(text, "latin1") + 1 };
}

/** The pack into the host's object store, every object checked (index-pack --strict); returns the pack's name. */
async function indexPack(repo: string, path: string, offset: number): Promise<string> {
  const proc = spawn("git", ["index-pack", "--strict", "--fix-thin", "--stdin"], { cwd: repo, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  proc.stderr.setEncoding("utf8").on("data", (c: string) => (stderr = (stderr + c).slice(-4096)));
  const exited = new Promise<number | null>((resolve, reject) => {
    proc.once("error", reject);
    proc.once("close", (code) => resolve(code));
  });
  proc.stdin.on("error", () => {}); // index-pack refusing early closes its stdin: its exit says why
  await pipeline(createReadStream(path, { start: offset }), proc.stdin).catch(() => {});
  const code = await exited;
  const line = stderr.trim().split("\n").filter((l) => l.length > 0).slice(-2).join(" | ");
  if (code !== 0) throw new IntakeRefused(`its objects fail git's checks: ${line || `index-pack exit ${code}`}`);
  const name = /^(?:pack|keep)\t([0-9a-f]+)$/m.exec(stdout)?.[1];
  if (name === undefined) throw new IntakeRefused("index-pack named no pack");
  return name;
}

export interface Intake {
  readonly repo: string;
  readonly commonDir: string;
  readonly branch: string;
  /** What the branch pointed at when the phase began: the bundle's tip must descend from it, and the branch still be there. */
  readonly base: string;
  readonly bundle: string;
  readonly runId: string;
  /** Who owns the repository: what this (root) process adds to it is handed back. */
  readonly user: ContainerUser;
}

/** Moves the run's branch to the bundle's tip once every check holds; returns the new tip. Throws IntakeRefused. */
export async function takeBranch(intake: Intake): Promise<string> {
  const ref = branchRef(intake.branch);
  const header = await readBundleHeader(intake.bundle);
  if (header.refs.length !== 1 || header.refs[0]!.name !== ref) {
    throw new IntakeRefused(`the bundle must hold exactly ${ref}; it holds ${header.refs.map((r) => r.name).join(", ").slice(0, 200) || "no ref"}`);
  }
  const tip = header.refs[0]!.id;
  const pack = await indexPack(intake.repo, intake.bundle, header.packOffset);
  // A .rev file is made by some git versions only.
  const added = ["pack", "idx", "rev"].map((ext) => join(intake.commonDir, "objects", "pack", `pack-${pack}.${ext}`)).filter((p) => existsSync(p));
  await handBack(added, intake.user);
  if ((await git(intake.repo, ["cat-file", "-t", tip]).catch(() => "")) !== "commit") throw new IntakeRefused(`its tip ${tip} is not a commit`);
  if (!(await isAncestor(intake.repo, intake.base, tip)))
    throw new IntakeRefused(`its tip ${tip.slice(0, 12)} does not descend from ${intake.base.slice(0, 12)}, where the branch was when the phase began`);
  try {
    await git(intake.repo, ["update-ref", "-m", `sandcastle-queue: ${intake.runId} (the agent's branch, checked)`, ref, tip, intake.base]);
  } catch (error) {
    throw new IntakeRefused(`${ref} moved on the host while the agent worked (${(error as Error).message.split("\n")[0]}): not overwritten`);
  }
  await handBack([join(intake.commonDir, "refs", "heads"), join(intake.commonDir, "logs", "refs", "heads")].filter((p) => existsSync(p)), intake.user);
  return tip;
}

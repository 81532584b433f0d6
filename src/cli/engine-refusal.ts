// What to tell an operator whose container engine could not start a sandbox's container. A machine kind whose
// podman refuses its default runtime settings (runc or crun: `error setting rlimit …`, `setrlimit RLIMIT_NOFILE`,
// `cgroups in hybrid mode not supported`) needs a containers.conf of its own in CONTAINERS_CONF (README
// "Containers"); the worker gets it from its environment, and so must the command that opens a sandbox.

/** podman's own errors (its stderr in a `-it` run; the container's output goes to the terminal) that a containers.conf fixes. */
const SETTINGS_REFUSED = [/\brlimit\b/i, /RLIMIT_NOFILE/, /cgroups in hybrid mode/i, /OCI permission denied/];

/** The exit codes an engine uses for its own failures (125: the engine, 126: the runtime, 127: not found). */
const ENGINE_FAILURES = new Set([125, 126, 127]);

/**
 * One line naming what to set, or null. `stderr` is what the engine itself printed; `code` its exit code (a shell's
 * own 126 or 127 comes with nothing on the engine's stderr, so it is never taken for the engine's).
 */
export function engineRefusalHint(engine: string, code: number, stderr: string, containersConf: string | undefined): string | null {
  if (engine !== "podman" || !ENGINE_FAILURES.has(code) || !/^Error: /m.test(stderr)) return null;
  if (!SETTINGS_REFUSED.some((re) => re.test(stderr))) return null;
  const settings = 'runtime = "runc" and cgroup_manager = "cgroupfs" under [engine], default_ulimits = [] under [containers]';
  return containersConf === undefined
    ? `podman could not start the sandbox's container with its default settings (its error is above): this machine needs a containers.conf of its own — set CONTAINERS_CONF to one (${settings}; README "Containers"), as the worker has it`
    : `podman could not start the sandbox's container with CONTAINERS_CONF=${containersConf} (its error is above): check that file (${settings}; README "Containers")`;
}

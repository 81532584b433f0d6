// Redis refusing this process's credentials, told apart from a Redis that cannot be reached: a wrong password is
// fixed in a setting, not by starting Redis. ioredis reports the refusal only as an `error` event (the connect
// itself fails with "Connection is closed"), so connectRedis listens for it and asks here what it means.
import type { RedisTarget } from "./target.js";

export type CredentialsRefusal = "wrong" | "missing";

/** What a Redis error says about our credentials: `wrong` (WRONGPASS, "invalid password"), `missing` (NOAUTH), or null. */
export function credentialsRefusal(err: unknown): CredentialsRefusal | null {
  const message = err instanceof Error ? err.message : "";
  if (/^WRONGPASS\b|^ERR invalid password\b|^ERR invalid username-password pair\b/.test(message)) return "wrong";
  if (/^NOAUTH\b/.test(message)) return "missing";
  return null;
}

/** The one line that says so, naming the settings that hold the credentials (never their values). */
export function credentialsMessage(refusal: CredentialsRefusal, where: string, target: RedisTarget): string {
  if (target.kind === "cluster") {
    return refusal === "missing"
      ? `Redis at ${where} needs a password and none was given: set REDIS_CLUSTER_PASSWORD (and REDIS_CLUSTER_USERNAME for an ACL user)`
      : `Redis at ${where} refused the credentials (a wrong password or user name, or a disabled user): correct REDIS_CLUSTER_PASSWORD (and REDIS_CLUSTER_USERNAME)`;
  }
  return refusal === "missing"
    ? `Redis at ${where} needs a password and none was given: put it in REDIS_URL as redis://:PASSWORD@host:port (redis://USER:PASSWORD@host:port for an ACL user)`
    : `Redis at ${where} refused the credentials (a wrong password or user name, or a disabled user): correct them in REDIS_URL (redis://USER:PASSWORD@host:port, or redis://:PASSWORD@host:port for the default user)`;
}

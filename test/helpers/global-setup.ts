// Filled in by the foundation: starts one isolated redis-server per test run unless REDIS_URL is set.
export default async function setup(): Promise<void> {}

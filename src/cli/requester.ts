import { userInfo } from "node:os";

/** Who asked, for audit rows and the kill switch: "cli:<user>@pid<pid>". */
export function requester(): string {
  let user = "unknown";
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry
  }
  return `cli:${user}@pid${process.pid}`;
}

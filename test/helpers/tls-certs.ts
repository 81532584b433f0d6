// A throwaway private CA and a server certificate it signed (for 127.0.0.1 and localhost), made by openssl.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface TestCerts {
  /** The CA's certificate (PEM): what an operator hands to NODE_EXTRA_CA_CERTS. */
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  /** redis-server's TLS settings for these files (clients are not asked for a certificate). */
  readonly serverArgs: readonly string[];
  /** The CA's PEM text, for the test's own clients. */
  caPem(): string;
}

export function makeTestCertificates(dir: string): TestCerts {
  const ca = join(dir, "ca.crt");
  const caKey = join(dir, "ca.key");
  const cert = join(dir, "server.crt");
  const key = join(dir, "server.key");
  const csr = join(dir, "server.csr");
  const ext = join(dir, "server.ext");
  const openssl = (args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey, "-out", ca, "-days", "2", "-subj", "/CN=sandcastle-queue test CA"]);
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"]);
  writeFileSync(ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl(["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext]);
  return {
    ca,
    cert,
    key,
    serverArgs: ["--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients", "no"],
    caPem: () => readFileSync(ca, "utf8"),
  };
}

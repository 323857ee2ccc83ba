/**
 * A stand-in for an attacker's web server on 127.0.0.1: plain HTTP or HTTPS with a throwaway
 * self-signed certificate (made with the openssl CLI), counting every TCP connection it
 * accepts. A test that renders model text pointing at it asserts the count stays zero, so a
 * request is caught even if it fails later (a refused certificate, a blocked response).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ExfilServer {
  /** `http://127.0.0.1:<port>` or `https://127.0.0.1:<port>`. */
  origin: string;
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** Request lines seen so far (`GET /?d=…`). */
  readonly requests: string[];
  close(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1 (EC P-256, two days). */
export function selfSignedCert(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), "lovia-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "key.pem", "-out", "cert.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
        "-addext", "subjectAltName=IP:127.0.0.1",
      ],
      { cwd: dir, stdio: "ignore", timeout: 60_000 },
    );
    return { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startExfilServer(options: { tls: boolean }): Promise<ExfilServer> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    requests.push(`${req.method} ${req.url}`);
    // A 1×1 GIF, as an exfiltration endpoint would answer.
    res.writeHead(200, { "content-type": "image/gif", "access-control-allow-origin": "*" });
    res.end(Buffer.from("R0lGODlhAQABAAAAACwAAAAAAQABAAA=", "base64"));
  };
  const server = options.tls ? createHttpsServer(selfSignedCert(), handler) : createHttpServer(handler);
  server.on("connection", (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `${options.tls ? "https" : "http"}://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

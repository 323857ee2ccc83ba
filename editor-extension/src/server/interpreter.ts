/**
 * Which Python can run the lovia server: probes an interpreter without starting the server.
 * vscode-free, so the real probe is tested against real interpreters.
 */
import { execFile } from "node:child_process";

export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** What one interpreter offers. `protocolVersion` is absent when `lovia_server` can't be imported. */
export interface ProbeResult {
  command: string;
  /** The interpreter ran at all. */
  runs: boolean;
  python?: string;
  /** Python >= {@link MIN_PYTHON}. */
  supported: boolean;
  protocolVersion?: number;
  version?: string;
  /** Why it can't run the server (import error, too old, not found), one line. */
  problem?: string;
}

// Runs on any Python 3; prints one JSON line. Older lovia builds have no lovia_server.version.
const PROBE_SCRIPT = [
  "import json, platform, sys",
  "out = {'python': platform.python_version(), 'supported': sys.version_info >= (3, 11)}",
  "try:",
  "    from lovia_server.protocol import PROTOCOL_VERSION",
  "    out['protocolVersion'] = PROTOCOL_VERSION",
  "    try:",
  "        from lovia_server.version import server_version",
  "        out['version'] = server_version()",
  "    except Exception:",
  "        pass",
  "except Exception as exc:",
  "    out['problem'] = type(exc).__name__ + ': ' + str(exc)",
  "print(json.dumps(out))",
].join("\n");

/** Runs `command -c <probe>`; never throws. */
export function probeInterpreter(command: string, timeoutMs = 20_000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      ["-c", PROBE_SCRIPT],
      { timeout: timeoutMs, windowsHide: true, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONSAFEPATH: "1" } },
      (error, stdout, stderr) => {
        const line = stdout.trim().split(/\r?\n/).at(-1) ?? "";
        let parsed: Partial<ProbeResult> | undefined;
        try {
          parsed = JSON.parse(line) as Partial<ProbeResult>;
        } catch {
          parsed = undefined;
        }
        if (!parsed || typeof parsed.python !== "string") {
          const why = error
            ? ((error as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : firstLine(stderr) || error.message)
            : "no answer";
          resolve({ command, runs: false, supported: false, problem: `${command}: ${why}` });
          return;
        }
        const result: ProbeResult = { command, runs: true, python: parsed.python, supported: parsed.supported === true };
        if (typeof parsed.protocolVersion === "number") result.protocolVersion = parsed.protocolVersion;
        if (typeof parsed.version === "string") result.version = parsed.version;
        if (!result.supported) result.problem = `Python ${parsed.python} is older than ${MIN_PYTHON.join(".")}`;
        else if (typeof parsed.problem === "string") result.problem = parsed.problem;
        resolve(result);
      },
    );
  });
}

function firstLine(text: string): string {
  const lines = text.trim().split(/\r?\n/).filter((l) => l.trim());
  return lines.at(-1)?.trim() ?? "";
}

/** The server can be started with it and speaks our protocol. */
export function canServe(probe: ProbeResult, protocolVersion: number): boolean {
  return probe.runs && probe.supported && probe.protocolVersion === protocolVersion;
}

/** Interpreter names to try for creating a private environment, newest first. */
export function basePythonCandidates(platform: NodeJS.Platform = process.platform): string[] {
  if (platform === "win32") return ["py", "python3", "python"];
  return ["python3.14", "python3.13", "python3.12", "python3.11", "python3", "python"];
}

/** The first candidate that runs and is new enough, or undefined. */
export async function findBasePython(
  candidates: readonly string[],
  probe: (command: string) => Promise<ProbeResult> = probeInterpreter,
): Promise<ProbeResult | undefined> {
  for (const command of candidates) {
    const result = await probe(command);
    if (result.runs && result.supported) return result;
  }
  return undefined;
}

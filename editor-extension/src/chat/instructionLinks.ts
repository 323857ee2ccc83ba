import { pathToFileURL } from "node:url";

import type { InstructionFileInfo } from "../protocol/types";
import type { InstructionLink } from "./viewState";

/**
 * An instruction file as the panel links it: named as `lovia chat` and ACP name it (relative to
 * its folder, with the globs a scoped file covers, and whether it was cut), opened by its URI.
 */
export function instructionLink(file: InstructionFileInfo): InstructionLink {
  const folder = file.folder.replace(/\/+$/, "") + "/";
  let label = file.path.startsWith(folder) ? file.path.slice(folder.length) : file.path;
  if (file.scope === "scoped" && file.applyTo.length > 0) label += ` (for ${file.applyTo.join(", ")})`;
  if (file.cut) label += " (cut)";
  return { label, uri: pathToFileURL(file.path).toString() };
}

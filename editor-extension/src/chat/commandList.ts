import type { LoviaClient } from "../protocol/client";
import type { CommandItem } from "./messages";

/**
 * The `/` menu's items: the server's commands (`lovia/commands`) for the panel's folder —
 * built-ins, the workspace's command files and the user's, each with where it comes from, so a
 * command a workspace brings is labelled as the workspace's (also in Restricted Mode).
 */
export async function listCommands(client: Pick<LoviaClient, "commands">, cwd?: string): Promise<CommandItem[]> {
  const result = await client.commands(cwd ? { cwd } : {});
  return result.commands.map((c) => ({
    name: c.name,
    description: c.description,
    source: c.source,
    ...(c.argumentHint ? { argumentHint: c.argumentHint } : {}),
  }));
}

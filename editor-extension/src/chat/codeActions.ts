/**
 * The server's code actions (`lovia: Fix this problem`, `lovia: Explain this`, ...) as VS Code
 * shows them in the lightbulb and the Problems view. vscode-languageclient lists them already;
 * choosing one runs its command (`lovia.action.*`), which goes through here: the run the server
 * starts opens in the panel (so it is followed there, with its approvals), *Ask about this…* and
 * *Tell the agent…* take the user's words from an input box, and *Show pending approvals* opens
 * the panel, where the approvals are.
 */

export const ACTION_PREFIX = "lovia.action.";

export type Next = (command: string, args: unknown[]) => Promise<unknown>;

export interface CodeActionUi {
  /** Reveal the chat panel. */
  reveal(): void;
  /** Show the conversation of a run the server just started. */
  openSession(sessionId: string): Promise<void>;
  /** One line of text from the user (undefined: cancelled). */
  input(prompt: string, placeHolder: string): Promise<string | undefined>;
}

function firstArg(args: unknown[]): Record<string, unknown> {
  const first = args[0];
  return first !== null && typeof first === "object" ? (first as Record<string, unknown>) : {};
}

/** Route one `workspace/executeCommand` of the client: lovia's actions here, the rest on. */
export async function routeCommand(command: string, args: unknown[], next: Next, ui: CodeActionUi): Promise<unknown> {
  if (!command.startsWith(ACTION_PREFIX)) return next(command, args);
  const arg = firstArg(args);
  switch (command.slice(ACTION_PREFIX.length)) {
    case "approvals":
      ui.reveal();
      return undefined;
    case "ask": {
      const prompt = await ui.input("lovia: Ask about this", "What do you want to know about this code?");
      if (!prompt?.trim()) return undefined;
      return started(await next(command, [{ ...arg, prompt }]), ui);
    }
    case "tell": {
      const message = await ui.input("lovia: Tell the agent", "A message for the running agent");
      if (!message?.trim()) return undefined;
      return next(command, [{ ...arg, message }]);
    }
    case "cancel":
      return next(command, args);
    default:
      return started(await next(command, args), ui);
  }
}

async function started(result: unknown, ui: CodeActionUi): Promise<unknown> {
  const sessionId = (result as { sessionId?: unknown } | undefined)?.sessionId;
  if (typeof sessionId === "string") {
    ui.reveal();
    await ui.openSession(sessionId);
  }
  return result;
}

/**
 * The messages between the extension and the chat webview, generated from
 * src/chat/messages.schema.json by `npm run gen:messages` (scripts/gen-messages.mjs).
 * Do not edit: change the schema, then run `npm run gen:messages`.
 */

import type { ApprovalChoice, ContextKind, EditedFile, Range } from "../protocol/generated";
import type { OutputChunk } from "../protocol/runView";
import type { Row } from "./rows";
import type { ChromeField, ChromeState } from "./viewState";

/** A completion for `@` in the composer, and what a send carries for it. */
export interface Mention {
  kind: ContextKind;
  label: string;
  /** A path or a symbol's container, shown dimmed. */
  detail?: string;
  /** The file, folder or (for problems) workspace folder. */
  uri: string;
  range?: Range;
}

/** A `/` command for the composer's menu (from `lovia/commands`). */
export interface CommandItem {
  name: string;
  description: string;
  argumentHint?: string;
  /** Where it comes from: `built-in`, `workspace` or `user`. */
  source: string;
}

/** What the webview posts: a user's intent (an untrusted boundary; the extension validates each with `checkWebviewIntent` before use). */
export type WebviewIntent =
  /** The page loaded (again): send the whole state. */
  | {
    type: "ready";
  }
  /** The composer's text: a new prompt, or a steer of the live run. */
  | {
    type: "send";
    text: string;
    mode: "prompt" | "steer";
    context?: Mention[];
  }
  /** The user typed `@query`; answered by a `mentions` message with the same `requestId`. */
  | {
    type: "mentionQuery";
    query: string;
    requestId: number;
  }
  /** The user typed `/` at the start of the composer; answered by a `commands` message with the same `requestId`. */
  | {
    type: "commandQuery";
    requestId: number;
  }
  /** Start the composer's text as a new agent in a git worktree of its own (`lovia/run` with `isolation: "worktree"`), beside the shown conversation. */
  | {
    type: "newWorktreeAgent";
    text: string;
    context?: Mention[];
  }
  /** Withdraw a steer the run has not taken yet. */
  | {
    type: "unsteer";
    runId: string;
    messageId: string;
  }
  /** Stop a run (a subagent's), or without `runId` the live one. */
  | {
    type: "cancel";
    runId?: string;
  }
  /** Steer a given run (a subagent, from its card). */
  | {
    type: "steerRun";
    runId: string;
    text: string;
  }
  /** Answer an approval; `edits` are the files' texts after rejecting some hunks. */
  | {
    type: "approve";
    runId: string;
    approvalId: string;
    decision: ApprovalChoice;
    /** The user's reason, with a rejection. */
    message?: string;
    edits?: EditedFile[];
  }
  /** Open an approval's proposal in the diff editor. */
  | {
    type: "openDiff";
    runId: string;
    approvalId: string;
  }
  /** Open what a finished run changed in a file. */
  | {
    type: "openChange";
    runId: string;
    path: string;
  }
  /** Put text on the clipboard (a code block's copy button). */
  | {
    type: "copy";
    text: string;
  }
  /** Insert a code block at the editor's cursor. */
  | {
    type: "insertCode";
    text: string;
    language: string;
  }
  /** Answer a question the agent asked. */
  | {
    type: "answer";
    runId: string;
    questionId: string;
    answer: string;
  }
  /** Open a file, at a 1-based line when given (a link in the transcript). */
  | {
    type: "openLocation";
    uri: string;
    line?: number;
  }
  /** Show a session from the list. */
  | {
    type: "selectSession";
    sessionId: string;
  }
  | {
    type: "newSession";
  }
  /** Resume an interrupted run. */
  | {
    type: "resume";
    runId: string;
  }
  /** The session list was opened: fetch it again. */
  | {
    type: "refreshSessions";
  }
  | {
    type: "deleteSession";
    sessionId: string;
  }
  | {
    type: "dismissError";
  }
  | {
    type: "dismissSandboxNotice";
  }
  | {
    type: "setApiKey";
  }
  | {
    type: "chooseModel";
  }
  /** Run the offline demo model. */
  | {
    type: "useDemo";
  }
  /** Where the transcript is scrolled to (kept across reloads). */
  | {
    type: "scrolled";
    top: number;
    atBottom: boolean;
  }
  /** "Restore to here": put the files back as they were at a run's restore point. */
  | {
    type: "restoreCheckpoint";
    runId: string;
    checkpointId: string;
  }
  /** Compare the files with a run's restore point. */
  | {
    type: "compareCheckpoint";
    runId: string;
    checkpointId: string;
  };

/** Changes to one row since the webview last had it. */
export interface RowPatch {
  key: string;
  rev: number;
  /** Fields replaced whole. */
  set?: Record<string, unknown>;
  /** Fields that are gone. */
  unset?: string[];
  /** Text appended to string fields (a streamed chunk). */
  append?: Record<string, string>;
  /** Tool output appended (folded with the same `appendOutput` as the event store). */
  output?: OutputChunk[];
}

/** The panel's whole state: after the page (re)loads, or when a post was lost. */
export interface ResetMessage {
  type: "reset";
  chrome: ChromeState;
  rows: Row[];
}

/** What changed since the last post: chrome fields, rows inserted and removed, per-row patches. */
export interface PatchMessage {
  type: "patch";
  chrome?: Partial<ChromeState>;
  unsetChrome?: ChromeField[];
  /** Keys of rows that are gone. */
  remove?: string[];
  /** New rows, in order; `after` is the key of the row before it (null: first). */
  insert?: {
    after: string | null;
    row: Row;
  }[];
  patch?: RowPatch[];
}

/** Completions for an `@` the user is typing (answers a mentionQuery). */
export interface MentionsMessage {
  type: "mentions";
  requestId: number;
  items: Mention[];
}

/** The `/` commands of the panel's folder (answers a commandQuery). */
export interface CommandsMessage {
  type: "commands";
  requestId: number;
  items: CommandItem[];
}

/** What the view sync posts (the panel's state). */
export type SyncMessage = ResetMessage | PatchMessage;

/** What the extension posts to the webview. */
export type ExtensionMessage = ResetMessage | PatchMessage | MentionsMessage | CommandsMessage;

// ---------------------------------------------------------------------------
// Validation

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Why `value` is not a valid {@link WebviewIntent} (the first problem found), or undefined. */
export function checkWebviewIntent(value: unknown): string | undefined {
  return webviewIntentProblem(value, "webviewIntent");
}

/** Whether `value` is a valid {@link WebviewIntent} (see {@link checkWebviewIntent} for why not). */
export function isWebviewIntent(value: unknown): value is WebviewIntent {
  return checkWebviewIntent(value) === undefined;
}

function webviewIntentProblem(value: unknown, at: string): string | undefined {
  if (!isRecord(value)) return `${at}: expected an object`;
  switch (value["type"]) {
    case "ready": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "send": {
      const valueText: unknown = value["text"];
      if (valueText === undefined) return `${at}: missing "text"`;
      if (typeof valueText !== "string") return `${at}.text: expected a string`;
      const valueMode: unknown = value["mode"];
      if (valueMode === undefined) return `${at}: missing "mode"`;
      if (!(["prompt", "steer"] as unknown[]).includes(valueMode)) return `${at}.mode: expected one of "prompt", "steer"`;
      const valueContext: unknown = value["context"];
      if (valueContext !== undefined) {
        if (!Array.isArray(valueContext)) return `${at}.context: expected an array`;
        for (let valueContextIndex = 0; valueContextIndex < valueContext.length; valueContextIndex++) {
          const valueContextItem: unknown = valueContext[valueContextIndex];
          const valueContextItemProblem = mentionProblem(valueContextItem, `${at}.context[${valueContextIndex}]`);
          if (valueContextItemProblem !== undefined) return valueContextItemProblem;
        }
      }
      for (const valueKey of Object.keys(value)) {
        if (["type", "text", "mode", "context"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "mentionQuery": {
      const valueQuery: unknown = value["query"];
      if (valueQuery === undefined) return `${at}: missing "query"`;
      if (typeof valueQuery !== "string") return `${at}.query: expected a string`;
      const valueRequestId: unknown = value["requestId"];
      if (valueRequestId === undefined) return `${at}: missing "requestId"`;
      if (typeof valueRequestId !== "number" || !Number.isInteger(valueRequestId)) return `${at}.requestId: expected an integer`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "query", "requestId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "commandQuery": {
      const valueRequestId: unknown = value["requestId"];
      if (valueRequestId === undefined) return `${at}: missing "requestId"`;
      if (typeof valueRequestId !== "number" || !Number.isInteger(valueRequestId)) return `${at}.requestId: expected an integer`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "requestId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "newWorktreeAgent": {
      const valueText: unknown = value["text"];
      if (valueText === undefined) return `${at}: missing "text"`;
      if (typeof valueText !== "string") return `${at}.text: expected a string`;
      const valueContext: unknown = value["context"];
      if (valueContext !== undefined) {
        if (!Array.isArray(valueContext)) return `${at}.context: expected an array`;
        for (let valueContextIndex = 0; valueContextIndex < valueContext.length; valueContextIndex++) {
          const valueContextItem: unknown = valueContext[valueContextIndex];
          const valueContextItemProblem = mentionProblem(valueContextItem, `${at}.context[${valueContextIndex}]`);
          if (valueContextItemProblem !== undefined) return valueContextItemProblem;
        }
      }
      for (const valueKey of Object.keys(value)) {
        if (["type", "text", "context"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "unsteer": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valueMessageId: unknown = value["messageId"];
      if (valueMessageId === undefined) return `${at}: missing "messageId"`;
      if (typeof valueMessageId !== "string") return `${at}.messageId: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "messageId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "cancel": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId !== undefined) {
        if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      }
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "steerRun": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valueText: unknown = value["text"];
      if (valueText === undefined) return `${at}: missing "text"`;
      if (typeof valueText !== "string") return `${at}.text: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "text"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "approve": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valueApprovalId: unknown = value["approvalId"];
      if (valueApprovalId === undefined) return `${at}: missing "approvalId"`;
      if (typeof valueApprovalId !== "string") return `${at}.approvalId: expected a string`;
      const valueDecision: unknown = value["decision"];
      if (valueDecision === undefined) return `${at}: missing "decision"`;
      const valueDecisionProblem = approvalChoiceProblem(valueDecision, `${at}.decision`);
      if (valueDecisionProblem !== undefined) return valueDecisionProblem;
      const valueMessage: unknown = value["message"];
      if (valueMessage !== undefined) {
        if (typeof valueMessage !== "string") return `${at}.message: expected a string`;
      }
      const valueEdits: unknown = value["edits"];
      if (valueEdits !== undefined) {
        if (!Array.isArray(valueEdits)) return `${at}.edits: expected an array`;
        for (let valueEditsIndex = 0; valueEditsIndex < valueEdits.length; valueEditsIndex++) {
          const valueEditsItem: unknown = valueEdits[valueEditsIndex];
          const valueEditsItemProblem = editedFileProblem(valueEditsItem, `${at}.edits[${valueEditsIndex}]`);
          if (valueEditsItemProblem !== undefined) return valueEditsItemProblem;
        }
      }
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "approvalId", "decision", "message", "edits"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "openDiff": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valueApprovalId: unknown = value["approvalId"];
      if (valueApprovalId === undefined) return `${at}: missing "approvalId"`;
      if (typeof valueApprovalId !== "string") return `${at}.approvalId: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "approvalId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "openChange": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valuePath: unknown = value["path"];
      if (valuePath === undefined) return `${at}: missing "path"`;
      if (typeof valuePath !== "string") return `${at}.path: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "path"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "copy": {
      const valueText: unknown = value["text"];
      if (valueText === undefined) return `${at}: missing "text"`;
      if (typeof valueText !== "string") return `${at}.text: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "text"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "insertCode": {
      const valueText: unknown = value["text"];
      if (valueText === undefined) return `${at}: missing "text"`;
      if (typeof valueText !== "string") return `${at}.text: expected a string`;
      const valueLanguage: unknown = value["language"];
      if (valueLanguage === undefined) return `${at}: missing "language"`;
      if (typeof valueLanguage !== "string") return `${at}.language: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "text", "language"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "answer": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valueQuestionId: unknown = value["questionId"];
      if (valueQuestionId === undefined) return `${at}: missing "questionId"`;
      if (typeof valueQuestionId !== "string") return `${at}.questionId: expected a string`;
      const valueAnswer: unknown = value["answer"];
      if (valueAnswer === undefined) return `${at}: missing "answer"`;
      if (typeof valueAnswer !== "string") return `${at}.answer: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "questionId", "answer"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "openLocation": {
      const valueUri: unknown = value["uri"];
      if (valueUri === undefined) return `${at}: missing "uri"`;
      if (typeof valueUri !== "string") return `${at}.uri: expected a string`;
      const valueLine: unknown = value["line"];
      if (valueLine !== undefined) {
        if (typeof valueLine !== "number" || !Number.isInteger(valueLine)) return `${at}.line: expected an integer`;
      }
      for (const valueKey of Object.keys(value)) {
        if (["type", "uri", "line"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "selectSession": {
      const valueSessionId: unknown = value["sessionId"];
      if (valueSessionId === undefined) return `${at}: missing "sessionId"`;
      if (typeof valueSessionId !== "string") return `${at}.sessionId: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "sessionId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "newSession": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "resume": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "refreshSessions": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "deleteSession": {
      const valueSessionId: unknown = value["sessionId"];
      if (valueSessionId === undefined) return `${at}: missing "sessionId"`;
      if (typeof valueSessionId !== "string") return `${at}.sessionId: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "sessionId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "dismissError": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "dismissSandboxNotice": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "setApiKey": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "chooseModel": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "useDemo": {
      for (const valueKey of Object.keys(value)) {
        if (["type"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "scrolled": {
      const valueTop: unknown = value["top"];
      if (valueTop === undefined) return `${at}: missing "top"`;
      if (typeof valueTop !== "number" || !Number.isFinite(valueTop)) return `${at}.top: expected a finite number`;
      const valueAtBottom: unknown = value["atBottom"];
      if (valueAtBottom === undefined) return `${at}: missing "atBottom"`;
      if (typeof valueAtBottom !== "boolean") return `${at}.atBottom: expected a boolean`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "top", "atBottom"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "restoreCheckpoint": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valueCheckpointId: unknown = value["checkpointId"];
      if (valueCheckpointId === undefined) return `${at}: missing "checkpointId"`;
      if (typeof valueCheckpointId !== "string") return `${at}.checkpointId: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "checkpointId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
    case "compareCheckpoint": {
      const valueRunId: unknown = value["runId"];
      if (valueRunId === undefined) return `${at}: missing "runId"`;
      if (typeof valueRunId !== "string") return `${at}.runId: expected a string`;
      const valueCheckpointId: unknown = value["checkpointId"];
      if (valueCheckpointId === undefined) return `${at}: missing "checkpointId"`;
      if (typeof valueCheckpointId !== "string") return `${at}.checkpointId: expected a string`;
      for (const valueKey of Object.keys(value)) {
        if (["type", "runId", "checkpointId"].includes(valueKey)) continue;
        return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
      }
      return undefined;
    }
  }
  return `${at}: unknown type ${String(JSON.stringify(value["type"])).slice(0, 40)}`;
}

function mentionProblem(value: unknown, at: string): string | undefined {
  if (!isRecord(value)) return `${at}: expected an object`;
  const valueKind: unknown = value["kind"];
  if (valueKind === undefined) return `${at}: missing "kind"`;
  const valueKindProblem = contextKindProblem(valueKind, `${at}.kind`);
  if (valueKindProblem !== undefined) return valueKindProblem;
  const valueLabel: unknown = value["label"];
  if (valueLabel === undefined) return `${at}: missing "label"`;
  if (typeof valueLabel !== "string") return `${at}.label: expected a string`;
  const valueDetail: unknown = value["detail"];
  if (valueDetail !== undefined) {
    if (typeof valueDetail !== "string") return `${at}.detail: expected a string`;
  }
  const valueUri: unknown = value["uri"];
  if (valueUri === undefined) return `${at}: missing "uri"`;
  if (typeof valueUri !== "string") return `${at}.uri: expected a string`;
  const valueRange: unknown = value["range"];
  if (valueRange !== undefined) {
    const valueRangeProblem = rangeProblem(valueRange, `${at}.range`);
    if (valueRangeProblem !== undefined) return valueRangeProblem;
  }
  for (const valueKey of Object.keys(value)) {
    if (["kind", "label", "detail", "uri", "range"].includes(valueKey)) continue;
    return `${at}: unexpected property ${JSON.stringify(valueKey)}`;
  }
  return undefined;
}

function approvalChoiceProblem(value: unknown, at: string): string | undefined {
  if (!(["allow_once", "allow_always", "reject_once", "reject_always"] as unknown[]).includes(value)) return `${at}: expected one of "allow_once", "allow_always", "reject_once", "reject_always"`;
  return undefined;
}

function editedFileProblem(value: unknown, at: string): string | undefined {
  if (!isRecord(value)) return `${at}: expected an object`;
  const valuePath: unknown = value["path"];
  if (valuePath === undefined) return `${at}: missing "path"`;
  if (typeof valuePath !== "string") return `${at}.path: expected a string`;
  if (valuePath.length < 1) return `${at}.path: expected at least 1 character`;
  const valueNewText: unknown = value["newText"];
  if (valueNewText === undefined) return `${at}: missing "newText"`;
  if (typeof valueNewText !== "string") return `${at}.newText: expected a string`;
  return undefined;
}

function contextKindProblem(value: unknown, at: string): string | undefined {
  if (!(["file", "folder", "symbol", "selection", "problems"] as unknown[]).includes(value)) return `${at}: expected one of "file", "folder", "symbol", "selection", "problems"`;
  return undefined;
}

function rangeProblem(value: unknown, at: string): string | undefined {
  if (!isRecord(value)) return `${at}: expected an object`;
  const valueStart: unknown = value["start"];
  if (valueStart === undefined) return `${at}: missing "start"`;
  const valueStartProblem = positionProblem(valueStart, `${at}.start`);
  if (valueStartProblem !== undefined) return valueStartProblem;
  const valueEnd: unknown = value["end"];
  if (valueEnd === undefined) return `${at}: missing "end"`;
  const valueEndProblem = positionProblem(valueEnd, `${at}.end`);
  if (valueEndProblem !== undefined) return valueEndProblem;
  return undefined;
}

function positionProblem(value: unknown, at: string): string | undefined {
  if (!isRecord(value)) return `${at}: expected an object`;
  const valueLine: unknown = value["line"];
  if (valueLine !== undefined) {
    if (typeof valueLine !== "number" || !Number.isInteger(valueLine)) return `${at}.line: expected an integer`;
    if (valueLine < 0) return `${at}.line: expected at least 0`;
  }
  const valueCharacter: unknown = value["character"];
  if (valueCharacter !== undefined) {
    if (typeof valueCharacter !== "number" || !Number.isInteger(valueCharacter)) return `${at}.character: expected an integer`;
    if (valueCharacter < 0) return `${at}.character: expected at least 0`;
  }
  return undefined;
}

import type { ApprovalChoice, ApproveParams, EditedFile } from "./types";

/** Whether the decision lets the call run (an allow, once or always). */
export function allows(decision: ApprovalChoice): boolean {
  return decision === "allow_once" || decision === "allow_always";
}

/**
 * `lovia/approve`'s params, with the protocol's one rule kept in one place (the card, the diff
 * editor and the controller all build them here): a message only with a rejection, trimmed and
 * never empty; edits only with an allow, and only when there are some.
 */
export function approveParams(
  runId: string,
  approvalId: string,
  decision: ApprovalChoice,
  extra: { message?: string | undefined; edits?: readonly EditedFile[] | undefined } = {},
): ApproveParams {
  const params: ApproveParams = { runId, approvalId, decision };
  const message = extra.message?.trim();
  if (message && !allows(decision)) params.message = message;
  if (extra.edits && extra.edits.length > 0 && allows(decision)) params.edits = [...extra.edits];
  return params;
}

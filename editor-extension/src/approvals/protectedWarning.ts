/**
 * The warning for a change to protected paths (editor, git, CI or agent configuration), worded
 * as the server's approval cards word it (`lovia.workspace.protected.protected_warning`): the
 * worktree apply review and the restore confirmation show it before the user confirms.
 */
export function protectedWarning(paths: readonly string[]): string {
  const shown = paths.slice(0, 3).join(", ") + (paths.length > 3 ? ` and ${paths.length - 3} more` : "");
  return `This change alters agent or editor configuration (${shown}). Such files can give the agent more power or run code later, so they always need your approval.`;
}

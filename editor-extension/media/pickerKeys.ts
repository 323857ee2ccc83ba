/**
 * The keys of a picker over the composer (the `@` mentions, the `/` commands): the arrows move,
 * Enter or Tab picks, Escape closes. One place, so both pickers answer the keyboard alike.
 */
export interface PickerMoves {
  /** Highlight the item at this index. */
  move(index: number): void;
  pick(index: number): void;
  close(): void;
}

/** Act on a key while a picker of `count` items is open; true when the key was used. */
export function pickerKey(e: KeyboardEvent, count: number, active: number, moves: PickerMoves): boolean {
  if (count === 0) return false;
  if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    moves.move((active + (e.key === "ArrowDown" ? 1 : count - 1)) % count);
    return true;
  }
  if (e.key === "Enter" || e.key === "Tab") {
    moves.pick(active);
    return true;
  }
  if (e.key === "Escape") {
    moves.close();
    return true;
  }
  return false;
}

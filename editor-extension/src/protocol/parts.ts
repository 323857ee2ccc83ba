import type { NotificationPart } from "./generated";

/** The notification a large `lovia/event` comes in when the client declared `notificationParts`. */
export const PART_NOTIFICATION = "lovia/part";

function isPart(v: unknown): v is NotificationPart {
  if (typeof v !== "object" || v === null) return false;
  const p = v as Record<string, unknown>;
  return (
    Number.isInteger(p.id) && Number.isInteger(p.index) && Number.isInteger(p.count) && typeof p.text === "string"
  );
}

/**
 * Joins `lovia/part` slices back into the `lovia/event` notification they were cut from. A
 * slow client gets large events this way so that answers to its requests can go out between
 * two parts. Parts of one event arrive in order with no other notification between them; a
 * part that does not continue what is open (one went missing) drops what was gathered.
 */
export class PartAssembler {
  private openId: number | undefined;
  private gathered: string[] = [];

  /** The joined notification's params once its last part arrived, else `undefined`. */
  feed(params: unknown): unknown {
    if (!isPart(params)) return undefined;
    if (params.index === 0) {
      this.openId = params.id;
      this.gathered = [];
    }
    if (params.id !== this.openId || this.gathered.length !== params.index) {
      this.openId = undefined;
      this.gathered = [];
      return undefined;
    }
    this.gathered.push(params.text);
    if (params.index + 1 < params.count) return undefined;
    const text = this.gathered.join("");
    this.openId = undefined;
    this.gathered = [];
    try {
      const message = JSON.parse(text) as { method?: unknown; params?: unknown };
      return message.method === "lovia/event" ? message.params : undefined;
    } catch {
      return undefined;
    }
  }
}

"""The words memory gives the model: its tools' answers and the guidance in the system prompt."""

REMEMBERED = "Remembered. It will be available in future sessions."
ALREADY_KNOWN = "Already in your notes — nothing to add."
NOTHING_TO_REMEMBER = "Nothing to remember: the fact is empty."
FORGOTTEN = "Forgotten."
NOT_FOUND = "No matching note found to forget."
NOTHING_RECALLED = "(nothing relevant found in long-term memory)"

_GUIDANCE_HEAD = """\
## Memory
You have a long-term memory that persists across sessions.
- NOTES (below) are always visible to you: a short list of durable facts about the user, \
their preferences and standing instructions, and their projects.
- `remember(fact)` adds one short, self-contained fact to NOTES.
- `forget(fact)` removes a note that is wrong or no longer true."""

_GUIDANCE_ARCHIVE = """
- `recall(query)` searches the archive of past conversations for details that are not in \
NOTES (earlier decisions, names, numbers). Use it before asking the user to repeat themselves."""

_GUIDANCE_TAIL = """
Call `remember` immediately when the user explicitly asks you to remember something or \
corrects you; everything else is curated automatically at the end of the run."""

_GUIDANCE_TAIL_MANUAL = """
Call `remember` immediately when the user explicitly asks you to remember something or \
corrects you, and when you learn a durable fact worth keeping; nothing is saved otherwise."""

_EMPTY_NOTES = "(empty — use `remember` to save durable facts)"

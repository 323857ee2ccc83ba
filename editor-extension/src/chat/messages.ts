/**
 * Messages between the extension and the chat webview. The webview is a view: the extension
 * sends it the panel's state once ({@link ResetMessage}) and then only what changed
 * ({@link PatchMessage}: chrome fields, rows inserted/removed, and per-row field patches, with
 * streamed text as appends); the webview posts {@link WebviewIntent}s back, and the extension
 * takes one only after {@link checkWebviewIntent} passed it (the webview is untrusted).
 *
 * The messages are written once, in messages.schema.json; `npm run gen:messages` generates
 * their types and the validator into messages.generated.ts (CI fails when it is stale). The
 * view state they carry is in viewState.ts. The webview imports types only from here.
 */
export * from "./messages.generated";
export type * from "./viewState";

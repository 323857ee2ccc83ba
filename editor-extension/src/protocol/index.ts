export * from "./types";
export * from "./client";
export * from "./runView";
export * from "./eventStore";

/**
 * Syntax highlighting for code blocks, a bundle of its own (dist/highlight.js) that the chat
 * loads the first time it draws a code block. highlight.js core with the languages a coding
 * agent writes; the colours come from the VS Code theme (main.css maps its token classes).
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import kotlin from "highlight.js/lib/languages/kotlin";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import php from "highlight.js/lib/languages/php";
import python from "highlight.js/lib/languages/python";
import ruby from "highlight.js/lib/languages/ruby";
import rust from "highlight.js/lib/languages/rust";
import scss from "highlight.js/lib/languages/scss";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import swift from "highlight.js/lib/languages/swift";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const LANGUAGES = { bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, kotlin, makefile, markdown, php, python, ruby, rust, scss, shell, sql, swift, typescript, xml, yaml };
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);
hljs.registerAliases(["toml"], { languageName: "ini" });
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });

export interface Highlighter {
  /** Escaped HTML with `hljs-*` spans, or undefined for a language it does not know. */
  highlight(code: string, language: string): string | undefined;
}

const highlighter: Highlighter = {
  highlight(code, language) {
    const lang = language.toLowerCase();
    if (!hljs.getLanguage(lang)) return undefined;
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  },
};

(window as unknown as { loviaHighlighter?: Highlighter }).loviaHighlighter = highlighter;
window.dispatchEvent(new Event("lovia-highlighter"));

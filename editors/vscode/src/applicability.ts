// Where the editor's context-menu entries apply, from the text alone (no server round trip, so the menu opens at
// once): Convert and Add example inputs on a function or class of a file that imports torch, Verify in a file
// with a Triton kernel or a ModelNew. Pure, so it is unit-tested; contextKeys.ts keeps the editor's keys in step.

export interface Applicability {
  canConvert: boolean;
  canVerify: boolean;
}

const IMPORTS_TORCH = /^\s*(import torch\b|from torch\b)/m;
const TRITON_KERNEL = /^\s*@triton\.(jit|autotune|heuristics)\b|^\s*class ModelNew\b/m;
const DEFINITION = /^(async\s+def|def|class)\s/;
const MAX_LINES = 20000; // past this, the entries are shown and the server decides

/** What applies at 0-based `line` of `text`. */
export function applicability(text: string, line: number): Applicability {
  const lines = text.split("\n");
  if (lines.length > MAX_LINES) {
    return { canConvert: true, canVerify: true };
  }
  return {
    canConvert: IMPORTS_TORCH.test(text) && insideDefinition(lines, line),
    canVerify: TRITON_KERNEL.test(text),
  };
}

/** Whether `line` lies in a top-level `def` or `class` (its decorators included). */
function insideDefinition(lines: string[], line: number): boolean {
  for (let index = Math.min(line, lines.length - 1); index >= 0; index--) {
    const current = lines[index] ?? "";
    if (current.trim() === "" || /^\s/.test(current) || current.startsWith("#")) {
      continue;
    }
    if (DEFINITION.test(current)) {
      return true;
    }
    return current.startsWith("@") && decorates(lines, index);
  }
  return false;
}

function decorates(lines: string[], decorator: number): boolean {
  for (let index = decorator + 1; index < lines.length; index++) {
    const current = lines[index] ?? "";
    if (current.startsWith("@") || current.trim() === "") {
      continue;
    }
    return DEFINITION.test(current);
  }
  return false;
}

// Where the editor's context-menu entries apply, from the file's text alone (no server round trip, and known
// before the right-click: a key that followed the cursor would be set only after the menu had opened): Convert
// and Add example inputs in a file that imports torch and defines a function or class, Verify in a file with a
// Triton kernel or a ModelNew. Pure, so it is unit-tested; contextKeys.ts keeps the editor's keys in step.

export interface Applicability {
  canConvert: boolean;
  canVerify: boolean;
}

const IMPORTS_TORCH = /^\s*(import torch\b|from torch\b)/m;
const DEFINES = /^(async\s+def|def|class)\s+(?!get_inputs\b|get_init_inputs\b)\w/m;
const TRITON_KERNEL = /^\s*@triton\.(jit|autotune|heuristics)\b|^\s*class ModelNew\b/m;
const MAX_CHARS = 2_000_000; // past this, the entries are shown and the server decides

export function applicability(text: string): Applicability {
  if (text.length > MAX_CHARS) {
    return { canConvert: true, canVerify: true };
  }
  return { canConvert: IMPORTS_TORCH.test(text) && DEFINES.test(text), canVerify: TRITON_KERNEL.test(text) };
}

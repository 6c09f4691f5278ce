// The `tritonize` section the language server reads (lsp_server/settings.py), built from VS Code's settings.
// The keys come from package.json's `contributes.configuration`, so the manifest is the one list on this side
// (tests/editors/test_vscode.py holds it to the server's Settings); the token comes from secret storage.

/** Settings of the extension itself, never sent to the server (it would name them as unknown). */
export const EXTENSION_ONLY_KEYS: readonly string[] = ["interpreter", "trace.server"];
export const SECTION = "tritonize";

/** Server keys (`serverUrl`, `audit.select`, ...) from the manifest's configuration properties. */
export function serverKeys(properties: Record<string, unknown>): string[] {
  const prefix = `${SECTION}.`;
  return Object.keys(properties)
    .filter((name) => name.startsWith(prefix))
    .map((name) => name.slice(prefix.length))
    .filter((key) => !EXTENSION_ONLY_KEYS.includes(key));
}

/** The section as the server expects it: dotted keys nested (`audit.select` -> `audit: {select}`), and the
 *  token only when one is set, so a settings file never has to hold it. */
export function serverSettings(
  keys: readonly string[],
  get: (key: string) => unknown,
  token: string | undefined,
): Record<string, unknown> {
  const section: Record<string, unknown> = {};
  for (const key of keys) {
    const value = get(key);
    if (value === undefined) {
      continue;
    }
    const [head, ...rest] = key.split(".");
    if (head === undefined || rest.length === 0) {
      section[key] = value;
      continue;
    }
    const nested = (section[head] ?? {}) as Record<string, unknown>;
    nested[rest.join(".")] = value;
    section[head] = nested;
  }
  if (token) {
    section.token = token;
  }
  return section;
}

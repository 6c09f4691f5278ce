import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { EXTENSION_ONLY_KEYS, serverKeys, serverSettings } from "../src/settings";

interface Property {
  default?: unknown;
}
const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8")) as {
  contributes: { configuration: { properties: Record<string, Property> } };
};
const properties = manifest.contributes.configuration.properties;
const defaults = (key: string): unknown => properties[`tritonize.${key}`]?.default;

describe("serverKeys", () => {
  it("lists every contributed setting but the extension's own", () => {
    const keys = serverKeys(properties);
    assert.ok(keys.includes("serverUrl") && keys.includes("audit.select") && keys.includes("policy"));
    for (const own of EXTENSION_ONLY_KEYS) {
      assert.ok(properties[`tritonize.${own}`] !== undefined, `${own} is contributed`);
      assert.ok(!keys.includes(own), `${own} is not sent`);
    }
    assert.equal(keys.length, Object.keys(properties).length - EXTENSION_ONLY_KEYS.length);
  });
});

describe("serverSettings", () => {
  it("sends the defaults as the server spells them, audit nested, and no token when none is saved", () => {
    const section = serverSettings(serverKeys(properties), defaults, undefined);
    assert.deepEqual(section, {
      serverUrl: "http://127.0.0.1:8765",
      autoStart: true,
      backend: "inductor",
      model: null,
      device: "auto",
      samples: 4,
      rounds: 2,
      trials: 5,
      placement: "new_file",
      policy: "strict",
      dynamic: null,
      target: null,
      compileOnSave: true,
      codeLens: true,
      audit: { select: [], ignore: [] },
    });
  });

  it("adds the token from secret storage and skips what the editor does not know", () => {
    const values: Record<string, unknown> = { samples: 8, "audit.ignore": ["TRI5"] };
    const section = serverSettings(["samples", "rounds", "audit.ignore"], (key) => values[key], "s3cret");
    assert.deepEqual(section, { samples: 8, audit: { ignore: ["TRI5"] }, token: "s3cret" });
  });
});

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";

import { checkHealth, statusView, type StatusInputs } from "../src/status";

const base: StatusInputs = {
  server: "running",
  health: { reachable: true, backend: "inductor", device: "cpu", conversions: 0 },
  serverUrl: "http://127.0.0.1:8765",
  backend: "vllm",
  autoStart: true,
  interpreter: "/w/.venv/bin/python",
};

describe("statusView", () => {
  it("shows the backend the model server reports, and both servers in the tooltip", () => {
    const view = statusView(base);
    assert.equal(view.text, "$(zap) Tritonize: inductor");
    assert.equal(
      view.tooltip,
      [
        "Language server: running (/w/.venv/bin/python)",
        "Model server: reachable at http://127.0.0.1:8765 (inductor on cpu)",
        "Backend: inductor",
      ].join("\n"),
    );
    assert.equal(view.severity, "information");
    assert.equal(view.busy, false);
  });

  it("counts running conversions", () => {
    const busy = statusView({
      ...base,
      health: { reachable: true, backend: "inductor", device: "cuda", conversions: 2 },
    });
    assert.equal(busy.text, "$(zap) Tritonize: inductor (2 running)");
    assert.equal(busy.busy, true);
  });

  it("is calm about a model server that autoStart will start, and warns when nothing will", () => {
    const down = { ...base, health: { reachable: false as const, reason: "ECONNREFUSED" } };
    const auto = statusView(down);
    assert.equal(auto.text, "$(circle-outline) Tritonize: vllm");
    assert.match(
      auto.tooltip,
      /not reachable at http:\/\/127\.0\.0\.1:8765 \(ECONNREFUSED\); it starts with the first conversion/,
    );
    assert.equal(auto.severity, "information");
    const manual = statusView({ ...down, autoStart: false });
    assert.equal(manual.text, "$(debug-disconnect) Tritonize: vllm");
    assert.match(manual.tooltip, /start it with `tritonize serve` or turn on tritonize\.autoStart/);
    assert.equal(manual.severity, "warning");
  });

  it("shows a starting and a failed language server", () => {
    assert.equal(
      statusView({ ...base, server: "starting", health: undefined }).text,
      "$(loading~spin) Tritonize: vllm",
    );
    assert.equal(statusView({ ...base, server: "starting", health: undefined }).busy, true);
    const failed = statusView({ ...base, server: "failed", health: undefined });
    assert.equal(failed.text, "$(error) Tritonize: vllm");
    assert.equal(failed.severity, "error");
    assert.match(failed.tooltip, /^Language server: failed/);
  });
});

describe("checkHealth", () => {
  let server: Server;
  let url: string;
  let answer: { status: number; body: string };

  before(async () => {
    server = createServer((request, response) => {
      response.writeHead(request.url === "/health" ? answer.status : 404, { "Content-Type": "application/json" });
      response.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it("reads backend, device and conversions from /health", async () => {
    answer = {
      status: 200,
      body: JSON.stringify({ status: "ok", backend: "inductor", device: "cpu", conversions: 1 }),
    };
    assert.deepEqual(await checkHealth(`${url}/`, fetch), {
      reachable: true,
      backend: "inductor",
      device: "cpu",
      conversions: 1,
    });
  });

  it("reports an HTTP error and a closed port as unreachable, with the reason", async () => {
    answer = { status: 503, body: "{}" };
    assert.deepEqual(await checkHealth(url, fetch), { reachable: false, reason: "HTTP 503" });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    assert.deepEqual(await checkHealth(`http://127.0.0.1:${port}`, fetch), {
      reachable: false,
      reason: "ECONNREFUSED",
    });
  });

  it("gives up on a server that does not answer in time", async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      assert.deepEqual(await checkHealth(`http://127.0.0.1:${port}`, fetch, 200), {
        reachable: false,
        reason: "no answer in time",
      });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});

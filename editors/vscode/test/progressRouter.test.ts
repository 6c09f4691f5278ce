import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { ProgressRouter } from "../src/progressRouter";

type Reported = [string | undefined, number | undefined];

/** A notification that records what it was told. */
function notification(): {
  reports: Reported[];
  ended: number;
  report: (m?: string, i?: number) => void;
  end: () => void;
} {
  const shown = {
    reports: [] as Reported[],
    ended: 0,
    report: (message?: string, increment?: number) => void shown.reports.push([message, increment]),
    end: () => void (shown.ended += 1),
  };
  return shown;
}

describe("ProgressRouter", () => {
  it("shows a command's server progress in its notification, percentages as increments", () => {
    const router = new ProgressRouter();
    const shown = notification();
    router.open(shown);
    assert.equal(router.route("t1", { kind: "begin", title: "Converting Model to Triton", percentage: 0 }), true);
    assert.equal(router.route("t1", { kind: "report", message: "starting the model server" }), true);
    assert.equal(
      router.route("t1", { kind: "report", message: "round 1: candidate 1/2 correct", percentage: 50 }),
      true,
    );
    assert.equal(
      router.route("t1", { kind: "report", message: "round 1: candidate 2/2 correct", percentage: 40 }),
      true,
    );
    assert.equal(router.route("t1", { kind: "report", percentage: 100 }), true);
    assert.equal(shown.ended, 0);
    assert.equal(router.route("t1", { kind: "end", message: "done" }), true);
    assert.equal(shown.ended, 1);
    assert.deepEqual(shown.reports, [
      ["Converting Model to Triton", 0],
      ["starting the model server", undefined],
      ["round 1: candidate 1/2 correct", 50],
      ["round 1: candidate 2/2 correct", 0],
      [undefined, 50],
    ]);
    assert.equal(router.route("t1", { kind: "report", message: "late" }), false);
  });

  it("leaves progress nobody waits for to the client's default", () => {
    const router = new ProgressRouter();
    assert.equal(router.route("t1", { kind: "begin", title: "Verifying" }), false);
    assert.equal(router.route("t1", { kind: "report", message: "running" }), false);
  });

  it("gives each new progress to the oldest waiting notification, and none to a closed one", () => {
    const router = new ProgressRouter();
    const first = notification();
    const second = notification();
    const closeFirst = router.open(first);
    router.open(second);
    router.route("a", { kind: "begin", title: "Converting f to Triton" });
    router.route("b", { kind: "begin", title: "Verifying k.py against f" });
    router.route("b", { kind: "report", message: "running the candidate" });
    closeFirst();
    assert.equal(router.route("a", { kind: "report", message: "after close" }), false);
    assert.deepEqual(first.reports, [["Converting f to Triton", undefined]]);
    assert.deepEqual(second.reports, [
      ["Verifying k.py against f", undefined],
      ["running the candidate", undefined],
    ]);
  });
});

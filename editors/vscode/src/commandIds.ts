// Command ids: the extension's own (contributed in package.json) and the language server's, which
// vscode-languageclient registers in VS Code from the server's executeCommandProvider.

export const EXTENSION_COMMANDS = {
  convertHere: "tritonize.convertHere",
  verifyHere: "tritonize.verifyHere",
  addExampleInputs: "tritonize.addExampleInputs",
  showReport: "tritonize.showReport",
  setToken: "tritonize.setToken",
  restartServer: "tritonize.restartServer",
  showOutput: "tritonize.showOutput",
} as const;

export const SERVER_COMMANDS = {
  convert: "tritonize.convert",
  verify: "tritonize.verify",
  applyProposal: "tritonize.applyProposal",
} as const;

/** Server commands that run long enough for a cancellable notification, with its title. */
export const LONG_RUNNING: ReadonlyMap<string, string> = new Map([
  [SERVER_COMMANDS.convert, "Tritonize: converting to Triton"],
  [SERVER_COMMANDS.verify, "Tritonize: verifying the kernel"],
]);

-- :checkhealth tritonize: the Neovim version, the language server command, whether it runs and is attached,
-- and the model server it is set to use.
local M = {}

local function check_command(cmd)
  if type(cmd) ~= "table" or #cmd == 0 then
    vim.health.error("cmd is not a list of words", { 'set cmd = { "tritonize", "lsp" } in setup()' })
    return
  end
  if vim.fn.executable(cmd[1]) == 0 then
    vim.health.error(cmd[1] .. " is not executable", {
      "install tritonize in the Python environment Neovim starts in: pip install -e '.[lsp,serve]'",
      'or point cmd at that environment: { "/path/to/venv/bin/python", "-m", "lsp_server" }',
    })
    return
  end
  vim.health.ok("language server command: " .. table.concat(cmd, " "))
end

function M.check()
  vim.health.start("tritonize")
  if vim.fn.has("nvim-0.11") == 1 then
    vim.health.ok("Neovim " .. tostring(vim.version()))
  else
    vim.health.error("Neovim 0.11 or newer is needed (vim.lsp.config)")
  end
  local ok, tritonize = pcall(require, "tritonize")
  if not ok or not tritonize.configured then
    vim.health.warn('setup() has not been called', { 'require("tritonize").setup({}) in your init.lua' })
    return
  end
  check_command(tritonize.config.cmd)
  local clients = vim.lsp.get_clients({ name = "tritonize" })
  if #clients == 0 then
    vim.health.info("the language server is not running: it starts on the first Python file you open")
  else
    vim.health.ok(string.format("the language server is running (client %d)", clients[1].id))
  end
  local settings = tritonize.config.settings or {}
  vim.health.info("model server: " .. (settings.serverUrl or "http://127.0.0.1:8765")
    .. (settings.autoStart == false and " (not started automatically)" or " (started on the first conversion)"))
end

return M

-- Driven by tests/editors/test_nvim.py in a real headless Neovim: the plugin's commands beyond Convert
-- (:checkhealth tritonize, :TritonizeAddInputs, :TritonizeVerify with :TritonizeReport, :TritonizeCancel of a
-- conversion in flight); writes what it saw as JSON.
local env = vim.env
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h")
local recorder = dofile(here .. "/nvim_results.lua")
local results, step = recorder.results, recorder.step

local function attached(buf)
  return vim.wait(30000, function()
    return #vim.lsp.get_clients({ bufnr = buf, name = "tritonize" }) > 0
  end, 50)
end

vim.cmd("filetype on")
vim.opt.rtp:prepend(env.TRITONIZE_PLUGIN)
local tritonize = require("tritonize")
tritonize.setup({
  cmd = { env.TRITONIZE_PYTHON, "-m", "lsp_server" },
  settings = { serverUrl = env.TRITONIZE_SERVER, autoStart = false, samples = 1, rounds = 1, trials = 2 },
  -- A conversion that ends before the cancel must not wait for a person at the preview.
  confirm = function(_, done) done(false) end,
})
results.commands = vim.tbl_keys(vim.api.nvim_get_commands({}))
step("setup")

-- Add example inputs for the function under the cursor.
vim.cmd.edit(env.TRITONIZE_FUNCTION)
local function_buf = vim.api.nvim_get_current_buf()
attached(function_buf)
vim.api.nvim_win_set_cursor(0, { 5, 0 })
vim.cmd("TritonizeAddInputs")
vim.wait(30000, function()
  return table.concat(vim.api.nvim_buf_get_lines(function_buf, 0, -1, false), "\n"):find("def get_inputs") ~= nil
end, 50)
results.with_inputs = table.concat(vim.api.nvim_buf_get_lines(function_buf, 0, -1, false), "\n")
step("inputs")

vim.cmd("checkhealth tritonize")
results.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
step("health")

-- Verify, then the report window.
vim.cmd.edit(env.TRITONIZE_KERNEL)
attached(vim.api.nvim_get_current_buf())
tritonize.last_result = nil
vim.cmd("TritonizeVerify")
vim.wait(280000, function() return tritonize.last_result ~= nil end, 100)
results.verify = tritonize.last_result
vim.cmd("TritonizeReport")
results.report = vim.api.nvim_buf_get_lines(0, 0, -1, false)
vim.cmd("close")
step("verified")

-- A conversion cancelled while Inductor compiles: the compile stops, the result says so and the buffer is left
-- as it was.
vim.cmd.edit(env.TRITONIZE_TASK)
local task_buf = vim.api.nvim_get_current_buf()
attached(task_buf)
vim.wait(30000, function() return #vim.lsp.codelens.get(task_buf) > 0 end, 100)
results.lenses = vim.tbl_map(function(lens)
  return { line = lens.range.start.line, title = lens.command and lens.command.title }
end, vim.lsp.codelens.get(task_buf))
local before = table.concat(vim.api.nvim_buf_get_lines(task_buf, 0, -1, false), "\n")
vim.api.nvim_win_set_cursor(0, { tonumber(env.TRITONIZE_LINE), 0 })
tritonize.last_result = nil
local function parent(pid)
  local stat = io.open("/proc/" .. pid .. "/stat")
  if stat == nil then return nil end
  local text = stat:read("*a")
  stat:close()
  return tonumber(text:match("%) %S+ (%d+)"))
end

-- The capture processes of this test's model server (a child of the test's process): a parallel run's other
-- tests start captures of their own meanwhile.
local function captures()
  local test_pid, ours = tonumber(env.TRITONIZE_TEST_PID), {}
  for pid in vim.fn.system({ "pgrep", "-f", "model_server.inductor.capture" }):gmatch("%d+") do
    local ancestor = tonumber(pid)
    while ancestor ~= nil and ancestor > 1 and ancestor ~= test_pid do
      ancestor = parent(ancestor)
    end
    if ancestor == test_pid then table.insert(ours, pid) end
  end
  return table.concat(ours, " ")
end
vim.cmd("TritonizeConvert")
results.capture_running = vim.wait(60000, function() return captures() ~= "" end, 100)
results.cancelled = tritonize.cancel()
local cancelled_at = vim.uv.hrtime()
results.capture_stopped = vim.wait(10000, function() return captures() == "" end, 50)
results.capture_stop_seconds = (vim.uv.hrtime() - cancelled_at) / 1e9
results.convert = tritonize.last_result
vim.wait(3000, function() return false end, 100)
results.unchanged = table.concat(vim.api.nvim_buf_get_lines(task_buf, 0, -1, false), "\n") == before
results.nothing_left = tritonize.pending == nil
step("cancelled")
vim.cmd("qa!")

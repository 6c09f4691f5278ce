-- Driven by tests/editors/test_nvim.py in a real headless Neovim (`nvim --headless -u NONE ... +"luafile"`).
-- Opens a Triton file with a bug, then converts a PyTorch module through the plugin; writes what it saw as JSON.
local env = vim.env
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h")
local recorder = dofile(here .. "/nvim_results.lua")
local results, step = recorder.results, recorder.step

vim.cmd("filetype on")
vim.opt.rtp:prepend(env.TRITONIZE_PLUGIN)
local tritonize = require("tritonize")
tritonize.setup({
  cmd = { env.TRITONIZE_PYTHON, "-m", "lsp_server" },
  settings = {
    serverUrl = env.TRITONIZE_SERVER,
    autoStart = false,
    samples = 1,
    rounds = 1,
    trials = 2,
    placement = "below",
  },
  confirm = function(proposal, done)
    results.preview = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    results.preview_filetype = vim.bo.filetype
    done(true)
  end,
})
step("setup")

vim.cmd.edit(env.TRITONIZE_BUG)
vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50)
results.diagnostics = vim.tbl_map(function(d)
  return { code = d.code, line = d.lnum, source = d.source }
end, vim.diagnostic.get(0))
step("diagnostics")

vim.cmd.edit(env.TRITONIZE_TASK)
local task_buf = vim.api.nvim_get_current_buf()
vim.wait(30000, function()
  return #vim.lsp.get_clients({ bufnr = task_buf, name = "tritonize" }) > 0
end, 50)
vim.api.nvim_win_set_cursor(0, { tonumber(env.TRITONIZE_LINE), 0 })
-- Through the code action menu, as a user would: the plugin routes its command through the preview.
vim.lsp.buf.code_action({
  apply = true,
  filter = function(action) return action.title == "Convert Model to Triton" end,
})
vim.wait(280000, function() return tritonize.last_result ~= nil end, 100)
results.convert = tritonize.last_result
results.buffer = table.concat(vim.api.nvim_buf_get_lines(task_buf, 0, -1, false), "\n")
step("converted")
vim.cmd("qa!")

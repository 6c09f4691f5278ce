-- Driven by tests/editors/test_nvim.py in a real headless Neovim (`nvim --headless -u NONE ... +"luafile"`).
-- Opens plain Python files (nothing to say about them), a Triton file with a bug (its diagnostic and hover), a
-- Triton file with a fixable bug (fixed on save), then converts a PyTorch module through the plugin; writes what
-- it saw as JSON.
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
  fix_on_save = true,
  confirm = function(proposal, done)
    results.preview = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    results.preview_filetype = vim.bo.filetype
    done(true)
  end,
})
step("setup")

local function attached(buf)
  return vim.wait(30000, function()
    return #vim.lsp.get_clients({ bufnr = buf, name = "tritonize" }) > 0
  end, 50)
end

-- Plain Python, one file with a syntax error: the server is attached, and says nothing.
vim.cmd.edit(env.TRITONIZE_PLAIN)
local plain_buf = vim.api.nvim_get_current_buf()
results.plain_attached = attached(plain_buf)
local actions = vim.lsp.buf_request_sync(plain_buf, "textDocument/codeAction", {
  textDocument = vim.lsp.util.make_text_document_params(plain_buf),
  range = { start = { line = 3, character = 0 }, ["end"] = { line = 3, character = 0 } },
  context = { diagnostics = {} },
}, 10000)
results.plain_actions = {}
for _, reply in pairs(actions or {}) do
  for _, action in ipairs(reply.result or {}) do
    table.insert(results.plain_actions, action.title)
  end
end
vim.cmd.edit(env.TRITONIZE_BROKEN)
local broken_buf = vim.api.nvim_get_current_buf()
attached(broken_buf)

vim.cmd.edit(env.TRITONIZE_BUG)
local bug_buf = vim.api.nvim_get_current_buf()
vim.wait(30000, function() return #vim.diagnostic.get(bug_buf) > 0 end, 50)
results.diagnostics = vim.tbl_map(function(d)
  return { code = d.code, line = d.lnum, source = d.source }
end, vim.diagnostic.get(bug_buf))
results.quiet = { plain = #vim.diagnostic.get(plain_buf), broken = #vim.diagnostic.get(broken_buf) }
step("diagnostics")

-- Hover on the finding: its rule explained.
local finding = vim.diagnostic.get(bug_buf)[1]
local hovers = vim.lsp.buf_request_sync(bug_buf, "textDocument/hover", {
  textDocument = vim.lsp.util.make_text_document_params(bug_buf),
  position = { line = finding.lnum, character = finding.col },
}, 10000)
for _, reply in pairs(hovers or {}) do
  results.hover = reply.result and reply.result.contents.value
end
step("hover")

-- Fix on save: the written file has the fix, and the finding is gone.
vim.cmd.edit(env.TRITONIZE_FIXABLE)
local fixable_buf = vim.api.nvim_get_current_buf()
vim.wait(30000, function() return #vim.diagnostic.get(fixable_buf) > 0 end, 50)
results.before_save = vim.tbl_map(function(d) return d.code end, vim.diagnostic.get(fixable_buf))
vim.cmd.write()
results.saved = table.concat(vim.fn.readfile(env.TRITONIZE_FIXABLE), "\n")
vim.wait(10000, function() return #vim.diagnostic.get(fixable_buf) == 0 end, 50)
results.after_save = vim.tbl_map(function(d) return d.code end, vim.diagnostic.get(fixable_buf))
step("fixed on save")

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

-- tritonize for Neovim 0.11+: the language server (audit diagnostics, quick fixes, Convert to Triton,
-- Verify) registered through vim.lsp.config/vim.lsp.enable, plus :TritonizeConvert with a diff preview.
local M = {}

M.defaults = {
  cmd = { "tritonize", "lsp" },
  filetypes = { "python" },
  root_markers = { "pyproject.toml", "setup.py", ".git" },
  -- Sent as the `tritonize` section of workspace/configuration (see the README for every key).
  settings = {},
  -- Show the proposed kernel as a diff in a split and ask before applying it.
  preview = true,
  -- confirm(proposal, done): call done(true) to apply; the default asks with vim.ui.select.
  confirm = nil,
  -- Echo the server's progress reports ("round 1: candidate 3/8 incorrect (max err 0.2)").
  progress = true,
  -- Show the server's "Convert to Triton" code lenses (refreshed on entering a buffer, leaving insert mode, saving).
  codelens = true,
  -- Apply every machine-applicable fix of the file before it is written (source.fixAll.tritonize).
  fix_on_save = false,
}

local FIX_ALL = "source.fixAll.tritonize"
local FIX_ON_SAVE_MS = 2000

M.config = vim.deepcopy(M.defaults)
M.last_result = nil
-- The command request in flight ({ client, id, on_done, command }), so :TritonizeCancel can stop it.
M.pending = nil

local function client_for(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr or 0, name = "tritonize" })[1]
end

local function notify(message, level)
  vim.notify("tritonize: " .. message, level or vim.log.levels.INFO)
end

local function finish(result, on_done)
  M.last_result = result
  if on_done then
    on_done(result)
  end
end

-- Send a server command; a request error is shown and reported as { status = "error" }, a result goes to
-- on_result (by default straight to on_done). A reply to a request cancelled meanwhile is dropped.
local function execute(client, bufnr, command, argument, on_done, on_result)
  local pending = { client = client, on_done = on_done, command = command }
  local ok, id = client:request("workspace/executeCommand", { command = command, arguments = { argument } },
    function(err, result)
      if pending.cancelled then
        return
      end
      if M.pending == pending then
        M.pending = nil
      end
      if err then
        notify(err.message, vim.log.levels.ERROR)
        return finish({ status = "error", message = err.message }, on_done)
      end
      if on_result then
        return on_result(result)
      end
      finish(result, on_done)
    end, bufnr)
  if ok then
    pending.id = id
    M.pending = pending
  end
end

--- Cancel the conversion or verification in flight: the language server stops it, and the model server with it.
function M.cancel()
  local pending = M.pending
  if not pending then
    notify("nothing to cancel")
    return false
  end
  M.pending = nil
  pending.cancelled = true
  pending.client:cancel_request(pending.id)
  notify(pending.command:gsub("^tritonize%.", "") .. " cancelled")
  finish({ status = "cancelled", message = "cancelled" }, pending.on_done)
  return true
end

local function attached_client(bufnr)
  local client = client_for(bufnr)
  if not client then
    notify("the language server is not attached to this buffer (see :checkhealth vim.lsp)", vim.log.levels.ERROR)
  end
  return client
end

local function apply_proposal(client, result, on_done)
  execute(client, nil, "tritonize.applyProposal", { proposal = result.proposal }, on_done, function(applied)
    finish(vim.tbl_extend("force", result, applied or {}), on_done)
  end)
end

--- A scratch split showing the proposed change as a unified diff; returns its buffer.
function M.show_preview(preview)
  local before = preview.before or ""
  local after = preview.after or ""
  local diff = (vim.text and vim.text.diff or vim.diff)(before, after, { ctxlen = 3 })
  local name = vim.uri_to_fname(preview.uri)
  local lines = { (preview.new_file and "new file " or "changes to ") .. name, "" }
  vim.list_extend(lines, vim.split(diff, "\n", { trimempty = true }))
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "diff"
  pcall(vim.api.nvim_buf_set_name, buf, "tritonize://preview")
  return buf
end

local function default_confirm(proposal, done)
  vim.ui.select({ "Apply", "Discard" }, { prompt = "tritonize: " .. (proposal.summary or "apply the kernel?") },
    function(choice) done(choice == "Apply") end)
end

local function review(client, result, on_done)
  local origin = vim.api.nvim_get_current_win()
  local preview_buf = M.show_preview(result.preview)
  local confirm = M.config.confirm or default_confirm
  confirm(result, function(ok)
    if vim.api.nvim_buf_is_valid(preview_buf) then
      vim.api.nvim_buf_delete(preview_buf, { force = true })
    end
    if vim.api.nvim_win_is_valid(origin) then
      vim.api.nvim_set_current_win(origin)
    end
    if ok then
      apply_proposal(client, result, on_done)
    else
      notify("kernel discarded")
      finish(vim.tbl_extend("force", result, { status = "discarded" }), on_done)
    end
  end)
end

--- Convert the function or nn.Module under the cursor (or at `line`, 0-based) to Triton.
function M.convert(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = attached_client(bufnr)
  if not client then
    return
  end
  local line = opts.line or (vim.api.nvim_win_get_cursor(0)[1] - 1)
  local argument = { uri = vim.uri_from_bufnr(bufnr), line = line, preview = M.config.preview }
  execute(client, bufnr, "tritonize.convert", argument, opts.on_done, function(result)
    if result and result.status == "proposed" then
      return review(client, result, opts.on_done)
    end
    finish(result, opts.on_done)
  end)
end

--- Verify the ModelNew in the current buffer against the task named by its `# tritonize-task:` line.
function M.verify(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = attached_client(bufnr)
  if client then
    execute(client, bufnr, "tritonize.verify", { uri = vim.uri_from_bufnr(bufnr) }, opts.on_done)
  end
end

--- Add example inputs (`get_inputs`) for the function or module under the cursor: the server's refactoring.
function M.add_inputs()
  if attached_client(0) then
    vim.lsp.buf.code_action({ apply = true, context = { only = { "refactor.tritonize.inputs" }, diagnostics = {} } })
  end
end

-- Not the seed: a 64-bit integer does not survive Lua's numbers (`tritonize verify --json` prints it).
local REPORT_FIELDS = { "verdict", "device", "policy", "trials", "max_abs_error", "max_rel_error", "coverage" }
local TIMING_FIELDS = { "candidate_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile" }

local function add_fields(lines, values, keys)
  for _, key in ipairs(keys) do
    if values[key] ~= nil and values[key] ~= vim.NIL then
      table.insert(lines, string.format("  %-20s %s", key, tostring(values[key])))
    end
  end
end

--- The lines of a conversion's or verification's report, for the report window.
function M.report_lines(result)
  if not result then
    return { "No conversion or verification has finished yet in this session." }
  end
  local lines = { "tritonize: " .. tostring(result.status) }
  if result.message then
    vim.list_extend(lines, vim.split("  " .. result.message, "\n", { plain = true }))
  end
  local report = result.report
  if type(report) == "table" then
    table.insert(lines, "")
    table.insert(lines, "report")
    add_fields(lines, report, REPORT_FIELDS)
    if type(report.timing) == "table" then
      add_fields(lines, report.timing, TIMING_FIELDS)
    end
    if type(report.message) == "string" and report.message ~= "" then
      vim.list_extend(lines, vim.split("  " .. report.message, "\n", { plain = true }))
    end
    for _, violation in ipairs(type(report.violations) == "table" and report.violations or {}) do
      table.insert(lines, string.format("  %s %s: %s", violation.rule, violation.severity, violation.message))
    end
  end
  return lines
end

--- A scratch split with the last result's report (`q` closes it); returns its buffer.
function M.show_report(result)
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.report_lines(result or M.last_result))
  vim.bo[buf].modifiable = false
  pcall(vim.api.nvim_buf_set_name, buf, "tritonize://report")
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, nowait = true })
  return buf
end

--- Apply the file's fixes (the server's source.fixAll.tritonize action) before the write, waiting for the
--- server's answer at most FIX_ON_SAVE_MS so a busy server never holds up a save.
function M.fix_all(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    return
  end
  local last = math.max(vim.api.nvim_buf_line_count(bufnr) - 1, 0)
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    range = { start = { line = 0, character = 0 }, ["end"] = { line = last, character = 0 } },
    context = { only = { FIX_ALL }, diagnostics = {} },
  }
  local reply = client:request_sync("textDocument/codeAction", params, FIX_ON_SAVE_MS, bufnr)
  for _, action in ipairs(reply and reply.result or {}) do
    if action.kind == FIX_ALL and action.edit then
      vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
    end
  end
end

local function echo_progress(args)
  local client = vim.lsp.get_client_by_id(args.data.client_id)
  local value = args.data.params and args.data.params.value or {}
  if client and client.name == "tritonize" and value.message then
    vim.api.nvim_echo({ { "tritonize: " .. value.message } }, false, {})
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  M.configured = true
  local config = M.config
  vim.lsp.config("tritonize", {
    cmd = config.cmd,
    filetypes = config.filetypes,
    root_markers = config.root_markers,
    settings = { tritonize = config.settings },
    init_options = { tritonize = config.settings },
  })
  vim.lsp.enable("tritonize")
  -- The code action's command goes through the same preview as :TritonizeConvert.
  vim.lsp.commands["tritonize.convert"] = function(command, ctx)
    local argument = command.arguments and command.arguments[1] or {}
    M.convert({ bufnr = ctx.bufnr, line = argument.line })
  end
  vim.api.nvim_create_user_command("TritonizeConvert", function(cmd)
    M.convert({ line = cmd.range > 0 and cmd.line1 - 1 or nil })
  end, { range = true, desc = "Convert the PyTorch function or nn.Module under the cursor to Triton" })
  vim.api.nvim_create_user_command("TritonizeVerify", function()
    M.verify()
  end, { desc = "Verify this Triton kernel against its task" })
  vim.api.nvim_create_user_command("TritonizeCancel", function()
    M.cancel()
  end, { desc = "Cancel the conversion or verification in flight" })
  vim.api.nvim_create_user_command("TritonizeAddInputs", function()
    M.add_inputs()
  end, { desc = "Add example inputs (get_inputs) for the function or module under the cursor" })
  vim.api.nvim_create_user_command("TritonizeReport", function()
    M.show_report()
  end, { desc = "Show the last conversion's or verification's report" })
  if config.codelens then
    vim.api.nvim_create_autocmd({ "LspAttach", "BufEnter", "InsertLeave", "BufWritePost" }, {
      group = vim.api.nvim_create_augroup("tritonize_codelens", { clear = true }),
      callback = function(args)
        if client_for(args.buf) then
          vim.lsp.codelens.refresh({ bufnr = args.buf })
        end
      end,
    })
  end
  if config.fix_on_save then
    vim.api.nvim_create_autocmd("BufWritePre", {
      group = vim.api.nvim_create_augroup("tritonize_fix_on_save", { clear = true }),
      callback = function(args)
        M.fix_all(args.buf)
      end,
    })
  end
  if config.progress then
    vim.api.nvim_create_autocmd("LspProgress", {
      group = vim.api.nvim_create_augroup("tritonize_progress", { clear = true }),
      callback = echo_progress,
    })
  end
end

return M

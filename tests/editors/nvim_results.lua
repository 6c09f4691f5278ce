-- What a headless Neovim test script saw, written as JSON to $TRITONIZE_E2E_OUT after every step (so a script
-- that stalls still says how far it got).
local M = { results = { steps = {} } }

function M.save()
  vim.fn.writefile({ vim.json.encode(M.results) }, vim.env.TRITONIZE_E2E_OUT)
end

function M.step(name)
  table.insert(M.results.steps, name)
  M.save()
end

return M
